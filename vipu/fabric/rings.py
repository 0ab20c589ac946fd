"""Directed rings through a block of IPUs: the paths every collective inside an IPU-Link domain runs on.

Why rings: a ring reduce-scatter or all-gather sends (p-1)/p of the data over each link it uses, which is
bandwidth-optimal, and a power-of-two aligned block always holds one (topology.ring, Hamiltonian). Each undirected
Hamiltonian cycle gives two directed rings (one per link direction), so a bidirectional ring uses 2 links of every
IPU. A whole torus ILD (16 machines x 4 IPUs on a Pod64) is 4-regular and splits into two edge-disjoint Hamiltonian
cycles, so four directed rings use all 4 links of every IPU in both directions (hardware.md's "~15.4 ms using 4
links of the 2D torus" for 1 GB). Smaller blocks of a torus, and mesh ILDs (Pod16), are not closed at the top and
bottom rows: their IPUs on those rows have 3 links, a ring uses 2 of them, so they get one bidirectional ring.

The decomposition is found by a small deterministic search on the rows x columns torus: start from H1 = every
row's ring and H2 = every column's ring, and swap the edges of unit squares between them (H1 takes a square's two
vertical edges, H2 its two horizontal ones) until both are single cycles. Every node keeps degree 2 in each, so a
connected H1 or H2 is a Hamiltonian cycle. The result is cached per (rows, columns) and checked link by link.
"""

from __future__ import annotations

from functools import lru_cache

from vipu.hardware.topology import Topology

Cell = tuple[int, int]  # (row, column) inside an ILD
Edge = frozenset  # of two cells


def block_rings(topology: Topology, first: int, size: int) -> tuple[tuple[int, ...], ...]:
    """Directed rings through every IPU of the aligned block [first, first+size) inside one ILD, using links with
    both ends in the block, no two rings sharing a link direction. One ring for 1 or 2 IPUs (2 IPUs: one link,
    used in both directions by the one ring), else both directions of each Hamiltonian cycle."""
    if size <= 2:
        return (tuple(range(first, first + size)),)
    rings: list[tuple[int, ...]] = []
    for cycle in hamiltonian_cycles(topology, first, size):
        rings += [cycle, (cycle[0], *cycle[:0:-1])]
    check_rings(topology, rings, frozenset(range(first, first + size)))
    return tuple(rings)


def hamiltonian_cycles(topology: Topology, first: int, size: int) -> list[tuple[int, ...]]:
    pod = topology.pod
    rows, cols = pod.machines_per_ild, topology.ipus_per_machine
    whole_torus = size == topology.ild_ipus and pod.ild_topology == "torus" and cols >= 3 and rows >= 3
    if whole_torus:
        pair = torus_decomposition(rows, cols)
        if pair is not None:
            ild = topology.place(first).ild
            return [tuple(topology.ipu_at(ild, r, c) for r, c in cycle) for cycle in pair]
    return [tuple(topology.ring(first, size))]


def check_rings(topology: Topology, rings, block: frozenset[int]) -> None:
    """Every ring visits each IPU of the block once over IPU-Links inside it; no link direction is used twice."""
    used: set[tuple[int, int]] = set()
    for ring in rings:
        assert sorted(ring) == sorted(block), f"ring {ring} does not cover the block"
        for a, b in zip(ring, ring[1:] + ring[:1]):
            assert topology.linked(a, b), f"IPUs {a} and {b} are adjacent in a ring but not IPU-Linked"
            assert (a, b) not in used, f"link {a}->{b} is used by two rings"
            used.add((a, b))


@lru_cache(maxsize=64)
def torus_decomposition(rows: int, cols: int, budget: int = 200_000) -> tuple[tuple[Cell, ...], ...] | None:
    """Two edge-disjoint Hamiltonian cycles of the rows x cols torus, as cell sequences; None if the bounded
    search finds none (callers then fall back to one bidirectional ring)."""

    def horizontal(r: int, c: int) -> Edge:
        return frozenset({(r, c), (r, (c + 1) % cols)})

    def vertical(r: int, c: int) -> Edge:
        return frozenset({(r, c), ((r + 1) % rows, c)})

    h1 = frozenset(horizontal(r, c) for r in range(rows) for c in range(cols))
    h2 = frozenset(vertical(r, c) for r in range(rows) for c in range(cols))
    squares = [(r, c) for r in range(rows) for c in range(cols)]
    calls = 0

    def search(h1: frozenset, h2: frozenset, start: int) -> tuple[frozenset, frozenset] | None:
        nonlocal calls
        calls += 1
        n1, n2 = _components(h1), _components(h2)
        if n1 == 1 and n2 == 1:
            return h1, h2
        if calls > budget:
            return None
        for i in range(start, len(squares)):
            r, c = squares[i]
            across = {horizontal(r, c), horizontal((r + 1) % rows, c)}
            down = {vertical(r, c), vertical(r, (c + 1) % cols)}
            if not (across <= h1 and down <= h2):
                continue
            s1, s2 = (h1 - across) | down, (h2 - down) | across
            # keep swaps that merge cycles; once H2 is one cycle, also those that keep it whole
            if _components(s1) + _components(s2) >= n1 + n2 and n2 != 1:
                continue
            found = search(s1, s2, i + 1)
            if found:
                return found
        return None

    found = search(h1, h2, 0)
    return None if found is None else tuple(_walk(edges) for edges in found)


def _components(edges: frozenset) -> int:
    parent: dict[Cell, Cell] = {}

    def root(x: Cell) -> Cell:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for edge in edges:
        a, b = tuple(edge)
        parent[root(a)] = root(b)
    return len({root(x) for x in parent})


def _walk(edges: frozenset) -> tuple[Cell, ...]:
    """The cycle the edges form, from cell (0, 0), first stepping to the smaller neighbour."""
    neighbours: dict[Cell, list[Cell]] = {}
    for edge in edges:
        a, b = tuple(edge)
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    order, previous, here = [(0, 0)], None, (0, 0)
    while True:
        step = min(n for n in neighbours[here] if n != previous) if previous is None else next(
            n for n in neighbours[here] if n != previous)
        if step == (0, 0):
            return tuple(order)
        order.append(step)
        previous, here = here, step
