"""A repair of IPUs that are not failed is refused whole, as a resume of an agent not drained is: each IPU named
with its state, the failed ones to repair instead, and for a drained agent's IPUs its resume."""

from __future__ import annotations

import pytest

from vipu.errors import FailedPrecondition


def test_a_repair_naming_an_ipu_not_failed_repairs_none_and_names_each_state_and_the_fix(scene_factory):
    scene = scene_factory("bow-pod64").partition("p1", 4).failed([8])
    scene.ctl.admin.set_agent_state("ag05", "DRAINED")  # IPUs 20-23
    with pytest.raises(FailedPrecondition) as refused:
        scene.ctl.partitions.repair_ipus([0, 8, 20, 30])
    assert refused.value.message == (
        "IPUs 0 (allocated), 20 (drained), 30 (idle) are not failed: repair undoes a failure (`vipu-admin fail ipus`,"
        " or a machine or IPU-Link lost), so there is nothing to repair; none was repaired: repair the failed ones"
        " alone, `vipu-admin repair ipus 8`; a drained agent's IPUs come back with `vipu-admin resume agent ag05`")
    assert scene.ctl.state.failed_ipus == {8}
    assert scene.ctl.partitions.repair_ipus([8, 8]) == [8] and scene.ctl.state.failed_ipus == set()


def test_a_repair_refused_names_a_completing_ipu_as_the_ipu_views_show_it(scene_factory):
    """Regression: an IPU whose job's run was still torn down showed completing in `vipu list ipus` but allocated in
    the refusal of its repair."""
    scene = scene_factory("bow-pod16").partition("p1", 4)
    first = scene.state.partitions["p1"].first_ipu
    teardown = 0b1111 << first  # its job ended, its program given KillWait
    with pytest.raises(FailedPrecondition) as refused:
        scene.ctl.partitions.repair_ipus([first], teardown)
    assert refused.value.message.startswith(f"IPU {first} (completing) is not failed")
