"""Rings through every block: Hamiltonian, on the block's own links, no link direction used twice; partitions'
links never overlap."""

from __future__ import annotations

import pytest

from vipu.fabric.bounds import rings_per_ipu, topology_injection
from vipu.fabric.rings import block_rings, torus_decomposition
from tests.fabric.helpers import block, topology


@pytest.mark.parametrize("rows", range(3, 17))
def test_a_torus_of_4_columns_splits_into_two_hamiltonian_cycles(rows):
    pair = torus_decomposition(rows, 4)
    assert pair is not None
    edges = []
    for cycle in pair:
        assert sorted(cycle) == sorted((r, c) for r in range(rows) for c in range(4))
        for (r1, c1), (r2, c2) in zip(cycle, cycle[1:] + cycle[:1]):
            horizontal = r1 == r2 and (c1 - c2) % 4 in (1, 3)
            vertical = c1 == c2 and (r1 - r2) % rows in (1, rows - 1)
            assert horizontal or vertical
            edges.append(frozenset({(r1, c1), (r2, c2)}))
    assert len(set(edges)) == len(edges) == 2 * 4 * rows  # disjoint, and together every edge of the torus


@pytest.mark.parametrize("pod, size, rings", [
    ("bow-pod16", 1, 1), ("bow-pod16", 2, 1), ("bow-pod16", 4, 2), ("bow-pod16", 8, 2), ("bow-pod16", 16, 2),
    ("bow-pod64", 32, 2), ("bow-pod64", 64, 4), ("bow-pod256", 64, 4), ("2x16-torus", 16, 4),
])
def test_rings_per_block(pod, size, rings):
    topo = topology(pod)
    for first in range(0, min(topo.size, 2 * topo.ild_ipus), size):  # block_rings checks every ring it returns
        assert len(block_rings(topo, first, size)) == rings
    assert rings_per_ipu(block(pod, 0, size)) == (0 if size == 1 else rings)


@pytest.mark.parametrize("pod, size, links", [("bow-pod16", 16, 3), ("bow-pod64", 64, 4), ("bow-pod64", 32, 3),
                                              ("bow-pod16", 2, 1), ("bow-pod16", 4, 2), ("bow-pod16", 8, 3)])
def test_topology_injection_counts_the_fewest_links_inside_the_block(pod, size, links):
    assert topology_injection(block(pod, 0, size)) == links * 32e9


@pytest.mark.parametrize("pod", ["bow-pod16", "bow-pod64"])
def test_partitions_never_share_an_ipu_link(pod):
    """Why no IPU-Link ledger: the rings of two aligned blocks of a size use disjoint links."""
    topo = topology(pod)
    size = 2
    while size <= topo.ild_ipus:
        seen: dict[frozenset, int] = {}
        for first in range(0, topo.size, size):
            for ring in block_rings(topo, first, size):
                for a, b in zip(ring, ring[1:] + ring[:1]):
                    owner = seen.setdefault(frozenset({a, b}), first)
                    assert owner == first, f"blocks at {owner} and {first} of size {size} share link {a}-{b}"
        size *= 2
