"""Strided groups (the replicas of each stage and shard): rings in grid order, and the price both the emulator
and the planner use."""

from __future__ import annotations

import pytest

from tests.fabric.helpers import pod, topology
from vipu.fabric.strided import price, ring_order, strided_allreduce_s, strided_groups
from vipu.jobs.collective_time import GroupShape, allreduce


@pytest.mark.parametrize("pod_name,first,size,stride,want", [
    # machine 0's ring of 4 is 0-1-2-3; machine 1 (IPUs 4-7) sits below it: replica order 0, 2, 4, 6 would take
    # 2 + 3 + 2 + 3 hops, grid order 0, 2, 6, 4 takes 2 + 1 + 2 + 1
    ("bow-pod16", 0, 8, 2, [(0, 2, 6, 4), (1, 3, 7, 5)]),
    # a column of a torus Pod64 (stride 4): every member the next one's neighbour
    ("bow-pod64", 0, 64, 4, [(0,) + tuple(range(60, 0, -4)), tuple(range(1, 64, 4)), tuple(range(2, 64, 4)),
                             tuple(range(3, 64, 4))]),
])
def test_groups_are_ringed_in_grid_order(pod_name, first, size, stride, want):
    topo = topology(pod_name)
    got = [ring_order(topo, group, first, size) for group in strided_groups(first, size, stride)]
    assert got == want
    if pod_name == "bow-pod64":
        for ring in got:
            assert all(topo.linked(a, b) for a, b in zip(ring, ring[1:] + ring[:1]))


def test_a_torus_column_costs_what_the_ring_formula_says():
    # 16 replicas 4 apart on a Pod64: 1-hop rings, no shared links, so the schedule's price is the formula's
    nbytes = 4 * 1_000_000
    seconds, latency = strided_allreduce_s(topology("bow-pod64"), 0, 64, 4, nbytes // 4, 4)
    p = pod("bow-pod64")
    ipu = p.links.ipu_link
    formula = 2 * 15 / 16 * nbytes / (2 * ipu.bytes_per_s) + 30 * ipu.latency_s + 15 / 16 * nbytes * 3 / 65e12
    assert seconds == pytest.approx(formula, rel=1e-4)
    assert latency == pytest.approx(30 * ipu.latency_s)
    assert allreduce(p, GroupShape(16, 4), nbytes).total_s == pytest.approx(seconds)


def test_stride_2_in_a_machine_pays_hops_and_shared_links():
    # the planner's old figure (2 disjoint 1-hop rings of 4) is out of reach: IPUs 0 and 2 are 2 hops apart and
    # the two groups share machine 0's links
    topo, nbytes = topology("bow-pod16"), 4 * 100_000
    result = price(topo, strided_groups(0, 8, 2), nbytes // 4, 4, 0, 8)
    ipu = pod("bow-pod16").links.ipu_link
    ideal = 2 * 3 / 4 * nbytes / (2 * ipu.bytes_per_s) + 6 * ipu.latency_s
    assert result.virtual_s > 1.5 * ideal
    assert allreduce(pod("bow-pod16"), GroupShape(4, 2), nbytes).total_s == pytest.approx(result.virtual_s, rel=1e-3)
