"""vipu_machines{state}: the IPU-Machines as `vipu info -N` shows them, by the same rule (agent_states.node_state);
a machine with a failed IPU and the others idle is mixed, as there, and one with every IPU failed down."""

from __future__ import annotations

import pytest

from vipu.control.startup import open_plane
from vipu.metrics.collector import StateCollector
from vipu.partition.agent_states import NODE_STATES


@pytest.fixture
def plane(tmp_path):
    plane = open_plane("bow-pod16", tmp_path / "state", "127.0.0.1", 8090)
    yield plane
    plane.stop()
    plane.store.close()


def machines_by_state(plane) -> dict[str, float]:
    [family] = [f for f in StateCollector(plane).collect() if f.name == "vipu_machines"]
    return {s.labels["state"]: s.value for s in family.samples}


def node_states(plane) -> list[str]:
    return [m.state for m in plane.read().machine_statuses()]


def test_a_partly_failed_machine_is_mixed_in_the_metrics_as_in_vipu_info(plane):
    assert machines_by_state(plane) == {**dict.fromkeys(NODE_STATES, 0), "idle": 4}
    plane.fail_ipus([1], "a test", "ipu1 lost")  # machine 0: one of its 4 IPUs
    plane.fail_ipus([4, 5, 6, 7], "a test", "machine 1 lost")  # machine 1: all of them
    assert node_states(plane) == ["mixed", "down", "idle", "idle"]  # vipu info -N: mix, down, idle, idle
    assert machines_by_state(plane) == {**dict.fromkeys(NODE_STATES, 0), "mixed": 1, "down": 1, "idle": 2}
