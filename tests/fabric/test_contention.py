"""GW-Links shared by concurrent cross-ILD collectives slow each down; partitions never share IPU-Links."""

from __future__ import annotations

import pytest

from vipu.errors import AlreadyExists, NotFound
from vipu.fabric import Group, GwLinkLedger, allreduce, gw_links_of
from tests.fabric.helpers import block, topology

N = 64 * 10**6


def alone_and_together(a: Group, b: Group) -> tuple[float, float, float, float]:
    """Each collective alone, then each while the other holds its GW-Links (runs at the same time)."""
    alone_a = allreduce(a, "g", nbytes=N, ledger=GwLinkLedger()).virtual_s
    alone_b = allreduce(b, "g", nbytes=N, ledger=GwLinkLedger()).virtual_s
    ledger = GwLinkLedger()
    with ledger.holding("b", gw_links_of(b)):
        together_a = allreduce(a, "g", nbytes=N, ledger=ledger).virtual_s
    with ledger.holding("a", gw_links_of(a)):
        together_b = allreduce(b, "g", nbytes=N, ledger=ledger).virtual_s
    assert ledger.holders() == []
    return alone_a, together_a, alone_b, together_b


def test_two_data_parallel_groups_on_the_same_gw_link_each_take_longer():
    # IPUs 0 and 1 of every machine share GW-Link 0: two groups across the four Pod64s at positions 0 and 1
    pod = topology("bow-pod256")
    a, b = Group.across_ilds(pod, 0), Group.across_ilds(pod, 1)
    alone_a, together_a, alone_b, together_b = alone_and_together(a, b)
    assert together_a > 1.9 * alone_a and together_b > 1.9 * alone_b  # bandwidth halves, latency stays
    assert alone_a == alone_b


def test_groups_on_different_gw_links_of_a_machine_do_not_slow_each_other():
    pod = topology("bow-pod256")
    alone_a, together_a, alone_b, together_b = alone_and_together(Group.across_ilds(pod, 0), Group.across_ilds(pod, 2))
    assert (together_a, together_b) == (alone_a, alone_b)


def test_two_allreduces_on_one_pod128_partition_share_its_gw_links():
    group = block("bow-pod128", 0, 128)
    alone = allreduce(group, "g", nbytes=N, ledger=GwLinkLedger())
    ledger = GwLinkLedger()
    with ledger.holding("other bucket", gw_links_of(group)):
        together = allreduce(group, "g", nbytes=N, ledger=ledger)
    assert together.virtual_s > alone.virtual_s
    phase = {p.name: p.virtual_s for p in alone.phases}
    shared = {p.name: p.virtual_s for p in together.phases}
    assert shared["reduce-scatter ipu_link"] == phase["reduce-scatter ipu_link"]  # IPU-Links: its own
    assert shared["reduce-scatter gw_link"] > 1.9 * phase["reduce-scatter gw_link"]


@pytest.mark.parametrize("pod, a, b", [
    ("bow-pod256", (0, 64), (64, 64)),  # two partitions in different ILDs: IPU-Links only
    ("bow-pod64", (0, 32), (32, 32)),  # two partitions in one ILD: disjoint IPU-Links (placement)
    ("bow-pod256", (0, 128), (128, 128)),  # two cross-ILD partitions on disjoint machines (switches non-blocking)
])
def test_partitions_on_their_own_links_do_not_slow_each_other(pod, a, b):
    alone_a, together_a, alone_b, together_b = alone_and_together(block(pod, *a), block(pod, *b))
    assert (together_a, together_b) == (alone_a, alone_b)


def test_ledger_bookkeeping():
    ledger = GwLinkLedger()
    link = ("gw-out", 3, 0)
    ledger.hold("a", [link, ("ipu", 0, 1)])  # IPU-Links are never counted
    ledger.hold("b", [link])
    assert ledger.users(link) == 2 and ledger.users(("ipu", 0, 1)) == 0
    with pytest.raises(AlreadyExists):
        ledger.hold("a", [link])
    ledger.release("a")
    ledger.release("b")
    assert ledger.users(link) == 0 and ledger.holders() == []
    with pytest.raises(NotFound):
        ledger.release("a")


def test_a_collective_registered_by_its_caller_is_not_counted_twice():
    pod = topology("bow-pod256")
    a, b = Group.across_ilds(pod, 0), Group.across_ilds(pod, 1)
    ledger = GwLinkLedger()
    alone = allreduce(a, "g", nbytes=N, ledger=ledger).virtual_s
    ledger.hold("job-a", gw_links_of(a))
    assert allreduce(a, "g", nbytes=N, ledger=ledger, ledger_key="job-a").virtual_s == alone
    ledger.hold("job-b", gw_links_of(b))
    assert allreduce(a, "g", nbytes=N, ledger=ledger, ledger_key="job-a").virtual_s > 1.9 * alone
    assert ledger.holders() == ["job-a", "job-b"]
