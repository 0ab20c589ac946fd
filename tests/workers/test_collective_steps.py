"""A collective's steps on one machine (vipu/workers/collective_steps.py), as a machine actor runs them."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.errors import FailedPrecondition
from vipu.workers.collective_steps import exchange, read_transfers
from vipu.workers.machine import Machine


@pytest.fixture
def machine(pod) -> Machine:
    return Machine(pod, 5)  # IPUs 20..23 of bow-pod64


def test_a_step_of_transfers_reads_before_it_writes_and_refuses_a_failed_link(machine):
    """collective_steps.exchange(): local transfers read before any write of their step; incoming values come as packs. IPUs are
    Pod-wide here, as RayTransport gives them (machine 5: IPUs 20..23)."""
    for ipu in range(20, 24):
        machine.put_tensor(ipu, "x", np.arange(6, dtype=np.float32) + 10 * (ipu - 20))
    assert [a.tolist() for a in read_transfers(machine, "x", [(21, ((0, 2), (4, 6)))])] == [[10, 11, 14, 15]]
    # one step: 20 -> 21 adds [0, 3); 21 -> 22 overwrites [3, 6); IPU 23 gets [0, 2) added from IPU 19's pack
    local = [(20, 21, ((0, 3),), True), (21, 22, ((3, 6),), False)]
    incoming = [(23, ((0, 2),), True, 19, 0, 0)]
    exchange(machine, "x", [(local, incoming)], [[np.array([100.0, 200.0], dtype=np.float32)]])
    assert machine.get_tensor(21, "x").tolist() == [10, 12, 14, 13, 14, 15]
    assert machine.get_tensor(22, "x").tolist() == [20, 21, 22, 13, 14, 15]
    assert machine.get_tensor(23, "x").tolist() == [130, 231, 32, 33, 34, 35]
    machine.fail_link(20, 21)
    with pytest.raises(FailedPrecondition, match="IPU-Link between IPUs 20 and 21 has failed"):
        exchange(machine, "x", [([(20, 21, ((0, 1),), True)], [])])
