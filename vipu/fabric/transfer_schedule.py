"""Ring phases as synchronous steps of transfers: the one schedule both the data path and the cost model use.

A step is a set of transfers that happen at once; every IPU reads what it sends before anything is written, and a
step never reads and writes the same elements of one IPU (check_hazards), so the steps give the same result run
on numpy dicts or on actors in any order within a step.

Ring reduce-scatter on a directed ring of p IPUs (position q sends to q+1): at step s = 0..p-2, position q sends the
chunk owned by position q-1-s, and the receiver adds it to its own copy. The chunk owned by position o therefore
starts at o+1 and is summed along the ring: x[o+1], then + x[o+2], ..., then + x[o] at its owner (the fixed
reduction order; collectives.py documents it). All-gather: at step s position q sends the chunk owned by q-s, which
the receiver overwrites. Scatter from the root at position t: at step s the positions t..t+s each pass one chunk on
(the root the one for position t+p-1-s, the others what they received the step before), so after p-1 steps every
chunk has reached its owner (intermediate IPUs keep a copy in place; they will hold the whole tensor anyway).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from vipu.fabric.group import Range, shard
from vipu.fabric.ring_plan import Ring


class Transfer(NamedTuple):
    src: int
    dst: int
    ranges: tuple[Range, ...]  # the same flat element ranges on both IPUs
    numel: int
    reduce: bool  # True: the receiver adds the values to its own; False: it overwrites them


@dataclass(frozen=True)
class Step:
    phase: str
    transfers: tuple[Transfer, ...]


def _same_length(rings: Sequence[Ring]) -> int:
    lengths = {len(ring.ipus) for ring in rings}
    assert len(lengths) <= 1, f"rings of different lengths {lengths} cannot run in the same steps"
    return lengths.pop() if lengths else 0


def _send(ring: Ring, q: int, owner_position: int, reduce: bool) -> Transfer | None:
    p = len(ring.ipus)
    owner = ring.ipus[owner_position % p]
    numel = ring.sizes[owner]
    if not numel:
        return None
    return Transfer(ring.ipus[q % p], ring.ipus[(q + 1) % p], ring.chunks[owner], numel, reduce)


def reduce_scatter_steps(rings: Sequence[Ring], phase: str) -> list[Step]:
    p = _same_length(rings)
    steps = []
    for s in range(p - 1):
        sends = (_send(ring, q, q - 1 - s, True) for ring in rings for q in range(p))
        steps.append(Step(phase, tuple(t for t in sends if t)))
    return steps


def all_gather_steps(rings: Sequence[Ring], phase: str) -> list[Step]:
    p = _same_length(rings)
    steps = []
    for s in range(p - 1):
        sends = (_send(ring, q, q - s, False) for ring in rings for q in range(p))
        steps.append(Step(phase, tuple(t for t in sends if t)))
    return steps


def scatter_steps(rings: Sequence[Ring], roots: Sequence[int], phase: str) -> list[Step]:
    """`roots[i]` is the IPU of rings[i] that holds the data."""
    p = _same_length(rings)
    starts = [ring.position(root) for ring, root in zip(rings, roots, strict=True)]
    steps = []
    for s in range(p - 1):
        sends = (_send(ring, t + d, t + p - 1 + d - s, False) for ring, t in zip(rings, starts) for d in range(s + 1))
        steps.append(Step(phase, tuple(x for x in sends if x)))
    return steps


def piece_sends(srcs: Sequence[int], dsts: Sequence[int], numel: int, phase: str) -> Step:
    """One step from one tensor group to another (pipeline stages, Megatron's scatter-gather): srcs[k] sends the
    k-th of t pieces of a tensor they all hold to dsts[k], each on its own route (t = 1: the whole tensor).
    Shard k and shard k of the next stage need not be IPU-Linked (t = 2 in a machine's ring of 4: 2 hops), so
    the route, not a hop count assumed here, sets the price; the planner prices this same step."""
    t = len(srcs)
    pieces = (shard(numel, t, k) for k in range(t))
    return Step(phase, tuple(Transfer(src, dst, ((lo, hi),), hi - lo, False)
                             for src, dst, (lo, hi) in zip(srcs, dsts, pieces, strict=True) if hi > lo))


def check_hazards(step: Step) -> None:
    """No IPU reads elements another transfer of the same step writes, and none is written twice in a step."""
    reads: dict[int, list[Range]] = defaultdict(list)
    writes: dict[int, list[Range]] = defaultdict(list)
    for t in step.transfers:
        reads[t.src].extend(t.ranges)
        writes[t.dst].extend(t.ranges)
    for ipu, written in writes.items():
        spans = sorted(written)
        for (_, stop), (start, _) in zip(spans, spans[1:]):
            assert stop <= start, f"step {step.phase}: IPU {ipu} is written twice in one step"
        for a, b in reads.get(ipu, ()):
            for c, d in written:
                assert b <= c or d <= a, f"step {step.phase}: IPU {ipu} reads [{a}, {b}) while [{c}, {d}) is written"
