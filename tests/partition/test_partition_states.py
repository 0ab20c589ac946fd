"""The partition lifecycle: the transition table, and the states a partition passes through via Partitions."""

from __future__ import annotations

import itertools

import pytest

from vipu.errors import FailedPrecondition
from vipu.partition.partition_states import TRANSITIONS, PartitionState, check_transition

S = PartitionState
ALL_PAIRS = list(itertools.product(S, S))

# The table, spelled out: a change to TRANSITIONS must be a change here too.
WANT_EDGES = {
    (S.PENDING, S.ACTIVE), (S.PENDING, S.FAILED), (S.PENDING, S.REMOVING),
    (S.ACTIVE, S.RESETTING), (S.ACTIVE, S.REMOVING), (S.ACTIVE, S.FAILED),
    (S.RESETTING, S.ACTIVE), (S.RESETTING, S.FAILED),
    (S.FAILED, S.RESETTING), (S.FAILED, S.REMOVING),
    (S.REMOVING, S.REMOVED),
}


def test_the_table_has_exactly_the_documented_edges_each_with_a_reason():
    edges = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert edges == WANT_EDGES
    assert set(TRANSITIONS) == set(S), "every state has a row, even the terminal one"
    assert all(reason.strip() for targets in TRANSITIONS.values() for reason in targets.values())
    assert TRANSITIONS[S.REMOVED] == {}


@pytest.mark.parametrize("current,new", ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS])
def test_each_pair_is_allowed_exactly_when_the_table_says(current, new, scene_factory):
    partition = scene_factory("bow-pod16").partition("p1", 4).ctl.partitions.get("p1")
    partition = partition.model_copy(update={"state": current})
    if new in TRANSITIONS[current]:
        check_transition("p1", current, new)
        moved = partition.moved_to(new, 99.0)
        assert moved.state == new and moved.history[-1].state == new and moved.history[-1].at == 99.0
        assert partition.state == current, "moved_to returns a copy"
    else:
        allowed = ", ".join(s.value for s in TRANSITIONS[current]) or "none (terminal)"
        with pytest.raises(FailedPrecondition) as caught:
            check_transition("p1", current, new)
        assert caught.value.message == (
            f"partition p1 is {current.value} and cannot become {new.value} (allowed from {current.value}: {allowed})"
        )
        with pytest.raises(FailedPrecondition):
            partition.moved_to(new, 99.0)


def states(partition) -> list[tuple[S, float]]:
    return [(t.state, t.at) for t in partition.history]


def test_create_records_pending_then_active(scene_factory, builders):
    scene = scene_factory("bow-pod64")
    t0 = scene.clock.now()

    partition = scene.ctl.partitions.create(builders.request("p1", 16))

    assert partition.state == S.ACTIVE
    assert states(partition) == [(S.PENDING, t0), (S.ACTIVE, t0)]
    assert partition.created_at == t0
    # one write: the stored record is already ACTIVE, so no reader sees placed-but-unrecorded IPUs
    puts, deletes = scene.journal.commits[-1]
    assert [(kind, name) for kind, name, _ in puts] == [("partition", "p1")] and deletes == []
    assert '"state":"ACTIVE"' in puts[0][2]


def test_reset_goes_active_resetting_active(scene_factory):
    scene = scene_factory("bow-pod64").partition("p1", 16)
    t1 = scene.clock.advance(5)

    partition = scene.ctl.partitions.reset("p1")

    assert partition.state == S.ACTIVE
    assert states(partition)[2:] == [(S.RESETTING, t1), (S.ACTIVE, t1)]
    assert scene.ctl.partitions.get("p1") == partition
    assert scene.journal.docs[("partition", "p1")] == partition.model_dump_json()


def test_fail_ipus_fails_exactly_the_partitions_holding_them(scene_factory):
    scene = scene_factory("bow-pod64").partition("a", 4).partition("b", 4).partition("c", 8).partition("d", 16)
    placed = {p.name: set(p.ipus) for p in scene.ctl.partitions.list()}
    hit = [next(iter(placed["a"])), max(placed["c"])]
    t1 = scene.clock.advance(3)

    failed = scene.ctl.partitions.fail_ipus(hit)

    assert sorted(p.name for p in failed) == ["a", "c"]
    now = {p.name: p for p in scene.ctl.partitions.list()}
    assert {name: p.state for name, p in now.items()} == {"a": S.FAILED, "b": S.ACTIVE, "c": S.FAILED, "d": S.ACTIVE}
    assert states(now["a"])[-1] == (S.FAILED, t1)
    assert {s.ipu for s in scene.ctl.partitions.ipu_statuses() if s.state == "failed"} == set(hit)


def test_failing_an_ipu_again_does_not_move_a_failed_partition(scene_factory):
    scene = scene_factory("bow-pod64").partition("a", 4).failed([1])
    history = scene.ctl.partitions.get("a").history

    assert scene.ctl.partitions.fail_ipus([1, 2]) == []
    assert scene.ctl.partitions.get("a").history == history


def test_a_failed_idle_ipu_is_never_placed(scene_factory, builders):
    scene = scene_factory("bow-pod16").failed([0])
    assert scene.ctl.partitions.list() == []
    assert scene.ctl.partitions.create(builders.request("p1", 1)).first_ipu == 1
    assert scene.ctl.partitions.create(builders.request("p2", 8)).first_ipu == 8


def test_remove_ends_removed_and_frees_the_ipus(scene_factory, builders):
    scene = scene_factory("bow-pod64").partition("p1", 32)
    t1 = scene.clock.advance(7)

    removed = scene.ctl.partitions.remove("p1")

    assert removed.state == S.REMOVED
    assert states(removed)[-2:] == [(S.REMOVING, t1), (S.REMOVED, t1)]
    assert scene.ctl.partitions.list() == []
    assert ("partition", "p1") not in scene.journal.docs
    assert all(s.state == "idle" and s.partition is None for s in scene.ctl.partitions.ipu_statuses())
    assert scene.ctl.partitions.create(builders.request("p64", 64)).first_ipu == 0


def test_removing_a_failed_partition_returns_only_its_healthy_ipus(scene_factory, builders):
    scene = scene_factory("bow-pod16").partition("p1", 4).failed([1])

    removed = scene.ctl.partitions.remove("p1")

    assert [t.state for t in removed.history][-3:] == [S.FAILED, S.REMOVING, S.REMOVED]
    statuses = {s.ipu: s.state for s in scene.ctl.partitions.ipu_statuses()[:4]}
    assert statuses == {0: "idle", 1: "failed", 2: "idle", 3: "idle"}
    assert scene.ctl.partitions.create(builders.request("pair", 2)).first_ipu == 2
