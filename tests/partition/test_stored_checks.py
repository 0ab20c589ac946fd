"""Stored records that contradict the Pod or each other are named before a controller serves them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vipu.hardware.pod_files import load_pod
from vipu.partition.admin_records import Agent, IpuFailure
from vipu.partition.partition_record import Partition
from vipu.partition.partition_states import PartitionState
from vipu.partition.stored_checks import contradictions

POD16 = load_pod("bow-pod16")


def partition(name: str, first: int, size: int, created: float = 0.0) -> tuple[str, Partition]:
    return "partition", Partition(name=name, size=size, num_gcds=1, gcd_sync_replicas=None, reconfigurable=False,
                                  allocation="default", cluster="cluster0", owner="u", first_ipu=first,
                                  state=PartitionState.ACTIVE, created_at=created, history=[])


def test_records_outside_a_smaller_pod_are_named():
    """A state of a Pod64 whose pod row was removed, started with --pod bow-pod16."""
    records = [partition("big", 32, 16), ("agent", Agent(name="ag20", host="h", port=1, machine=20, created_at=0)),
               ("ipu_failure", IpuFailure(name="40", ipu=40, created_at=0)), partition("fits", 0, 4)]
    assert [(c.kind, c.name, c.why) for c in contradictions(POD16, records)] == [
        ("partition", "big", "holds IPUs 32-47, outside this Pod's 0-15"),
        ("agent", "ag20", "is the agent of machine 20, outside this Pod's 0-3"),
        ("ipu_failure", "40", "marks IPU 40 failed, outside this Pod's 0-15"),
    ]


@given(st.lists(st.tuples(st.integers(0, 15), st.sampled_from([1, 2, 4])), max_size=8))
def test_what_is_left_after_the_named_ones_holds_each_ipu_once(blocks):
    records = [partition(f"p{i}", first - first % size, size, created=i) for i, (first, size) in enumerate(blocks)]
    bad = {c.name for c in contradictions(POD16, records)}
    kept = [p for _, p in records if p.name not in bad]
    held = [ipu for p in kept for ipu in p.ipus]
    assert len(held) == len(set(held))  # no IPU in two partitions
    for _, p in records:  # and none named without cause: each overlaps one kept that was created before it
        if p.name in bad:
            assert any(set(p.ipus) & set(k.ipus) and k.created_at < p.created_at for k in kept)
