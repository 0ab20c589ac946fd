"""The fixed reduction order: read off symbolically, documented (collectives.py), and reproduced bit for bit by a
numpy reference that adds in that order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.fabric import LocalTransport, allreduce, reduce_scatter, shard
from vipu.fabric.rings import block_rings
from tests.fabric.helpers import block, leaves, put_all, reference_in_order, symbolic_run

GROUPS = [("bow-pod16", 0, 2), ("bow-pod16", 4, 4), ("bow-pod16", 8, 8), ("bow-pod16", 0, 16),
          ("bow-pod64", 0, 64), ("2x16-torus", 0, 32), ("4x8-mesh", 0, 32)]


def fold(order):
    tree = order[0]
    for ipu in order[1:]:
        tree = (ipu, tree)  # the receiver adds the incoming partial sum to its own: local + incoming
    return tree


@pytest.mark.parametrize("spec", GROUPS)
def test_every_element_sums_each_ipu_once_in_the_same_order_everywhere(spec):
    group = block(*spec)
    transport = symbolic_run(allreduce, group, 45)
    trees = [transport.get_tensor(ipu, "x") for ipu in group.ipus]
    for e in range(45):
        assert sorted(leaves(trees[0][e].tree)) == list(group.ipus)
        assert all(t[e].tree == trees[0][e].tree for t in trees)  # the all-gather copies, never re-adds


def test_documented_order_inside_one_ild():
    # 4 IPUs, 2 directed rings (0,1,2,3) and (0,3,2,1); shard i (rank i) is cut in two pieces, piece r on ring r.
    # On ring r the piece owned by position o is summed from the IPU after it: x[o+1] + x[o+2] + x[o+3] + x[o].
    group = block("bow-pod16", 0, 4)
    rings = block_rings(group.topology, 0, 4)
    assert rings == ((0, 1, 2, 3), (0, 3, 2, 1))
    numel = 16
    transport = symbolic_run(reduce_scatter, group, numel)
    for rank, ipu in enumerate(group.ipus):
        a, b = shard(numel, 4, rank)
        got = transport.get_tensor(ipu, "x")
        for r, ring in enumerate(rings):
            o = ring.index(ipu)
            want = fold([ring[(o + i) % 4] for i in range(1, 5)])
            piece_start = a + (b - a) * r // 2
            assert got[piece_start].tree == want
    assert fold([1, 2, 3, 0]) == (0, (3, (2, 1)))  # IPU 0's first piece: ((x1 + x2) + x3) + x0


def test_documented_order_across_ilds():
    # 4 ILDs of 8 IPUs: each ILD sums its IPUs along its ring, then the GW ring adds the ILD sums in ILD order from
    # the ILD after the owner's: rank 8 (ILD 1) gets P2 + P3 + P0 + P1.
    group = block("4x8-mesh", 0, 32)
    transport = symbolic_run(reduce_scatter, group, 32)
    tree = transport.get_tensor(8, "x")[shard(32, 32, 8)[0]].tree
    sums = []
    while len({ipu // 8 for ipu in leaves(tree)}) > 1:  # unfold the GW ring: (this ILD's sum, incoming partial)
        local, tree = tree
        sums.insert(0, local)
    sums.insert(0, tree)
    ild_of = [{ipu // 8 for ipu in leaves(part)} for part in sums]
    assert ild_of == [{2}, {3}, {0}, {1}]


@pytest.mark.parametrize("spec", GROUPS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numel=st.integers(1, 120), dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_float_allreduce_is_bit_for_bit_the_reference_in_that_order(spec, numel, dtype, seed):
    group = block(*spec)
    rng = np.random.default_rng(seed)
    arrays = {ipu: (rng.standard_normal(numel) * 10.0 ** rng.integers(-3, 4, numel)).astype(dtype)
              for ipu in group.ipus}
    transport = LocalTransport()
    put_all(transport, group, arrays)
    allreduce(group, "x", transport)
    order = symbolic_run(allreduce, group, numel).get_tensor(group.ipus[0], "x")
    want = reference_in_order(order, arrays)
    for ipu in group.ipus:
        assert transport.get_tensor(ipu, "x").tobytes() == want.tobytes()
