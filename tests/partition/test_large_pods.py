"""Partitions on a Bow Pod1024 and on the largest Pod Graphcore names (65,536 IPUs): buddy placement, the largest
partition, what each IPU shows (`vipu list ipus`, `vipu top`, the metrics), failures and a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from vipu.errors import ResourceExhausted
from vipu.hardware.pod_files import load_pod
from vipu.partition.ipu_status import ipu_statuses
from vipu.partition.placement import ipus_in, largest_free_block, mask_of

POD65536 = load_pod(str(Path(__file__).resolve().parents[2] / "examples/pods/pod65536.yaml"))


@pytest.fixture(scope="module")
def pod65536_scene(scene_factory):
    """One controller on 65,536 IPUs for the module (making its 16,384 agents takes a second)."""
    return scene_factory(POD65536)


def test_partitions_on_a_pod1024_take_the_smallest_hole_and_span_racks(scene_factory):
    scene = scene_factory("bow-pod1024")
    for name, size in [("half", 512), ("one", 1), ("rack", 64), ("two", 2), ("quarter", 256)]:
        scene.partition(name, size)
    firsts = {p.name: p.first_ipu for p in scene.state.partitions.values()}
    assert firsts == {"half": 0, "one": 512, "rack": 576, "two": 514, "quarter": 768}
    assert largest_free_block(scene.state.usable_mask("default"), 1024) == 128  # 640-767 is what is left whole
    with pytest.raises(ResourceExhausted, match="no free aligned block of 256 IPUs in allocation default"):
        scene.partition("another", 256)


def test_each_ipu_of_a_pod1024_shows_its_state_machine_rack_and_partition(scene_factory):
    scene = scene_factory("bow-pod1024").partition("racks", 128).failed([1023])
    statuses = ipu_statuses(scene.state)
    assert len(statuses) == 1024
    assert statuses[127][:4] == (127, 31, 3, 1) and statuses[127].partition == "racks"
    assert statuses[127].state == "allocated" and statuses[128].state == "idle"
    assert statuses[1023].state == "failed" and statuses[1023].agent == "ag255"


def test_the_largest_pod_holds_a_partition_of_every_ipu_and_places_by_buddy_fit(pod65536_scene):
    scene = pod65536_scene
    state = scene.state
    assert largest_free_block(state.usable_mask("default"), POD65536.ipus) == 65_536
    for name, size in [("one", 1), ("rack", 64), ("racks", 1024), ("half", 32_768)]:
        scene.partition(name, size)
    firsts = {name: state.partitions[name].first_ipu for name in ("one", "rack", "racks", "half")}
    assert firsts == {"one": 0, "rack": 64, "racks": 1024, "half": 32_768}
    scene.failed([65_535])
    statuses = ipu_statuses(state)
    assert len(statuses) == 65_536 and statuses[-1].state == "failed" and statuses[-1].ild == 1023
    assert sum(s.state == "allocated" for s in statuses) == 1 + 64 + 1024 + 32_768 - 1  # the failed one
    for name in ("one", "rack", "racks", "half"):
        scene.ctl.partitions.remove(name)
    again = scene.restarted()
    assert again.state.used_mask == 0 and again.state.failed_ipus == {65_535}


@pytest.mark.parametrize("ipus", [[], [0], [7, 8, 65_535], list(range(0, 65_536, 3))])
def test_masks_and_their_ipus_round_trip(ipus):
    assert ipus_in(mask_of(ipus)) == sorted(ipus)
    assert mask_of(ipus) == sum(1 << i for i in ipus)
