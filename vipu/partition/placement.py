"""Topology-aware placement of a partition: which aligned block of IPUs it gets.

Why aligned power-of-two blocks: V-IPU partitions are powers of two "due to the required ring structure". With IPUs
numbered machine by machine (hardware/topology.py), the block [k*size, (k+1)*size) is always a sub-grid of the
IPU-Link grid (part of a machine, whole adjacent machines, or whole ILDs), so it holds a ring, and two partitions
never share an IPU-Link: each one's ring traffic stays on its own links, which is why placement never lets blocks
overlap.

Why buddy-style best fit: among the free aligned blocks of the requested size we take the one whose largest free
aligned enclosing block is smallest, i.e. we carve from the smallest hole that fits and keep large holes whole.
This is the buddy system's rule; it bounds fragmentation (a free set of F IPUs always holds an aligned block of the
largest power of two that the holes' sizes allow) and every step is a few integer mask operations, so placement
costs microseconds on a Pod256. Ties go to the lowest IPU number, so placement is deterministic.

Everything here is a pure function of bitmasks: bit i set = IPU i is available (free, healthy and inside the
allocation the request may use). The controller and the trace replay both call it.
"""

from __future__ import annotations


def block_mask(first: int, size: int) -> int:
    return ((1 << size) - 1) << first


def mask_of(ipus) -> int:
    mask = 0
    for ipu in ipus:
        mask |= 1 << ipu
    return mask


def _free_blocks(available: int, total: int, size: int) -> list[int]:
    """First IPUs of the aligned blocks of `size` that are wholly available."""
    full = (1 << size) - 1
    return [first for first in range(0, total - size + 1, size) if (available >> first) & full == full]


def place(available: int, total: int, size: int) -> int | None:
    """First IPU of the best aligned block of `size` IPUs among `available`, or None if there is none.

    `total` is the number of IPUs in the Pod; `size` must be a power of two (rules.py checks that first)."""
    candidates = _free_blocks(available, total, size)
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    # hole[first] = size of the largest wholly available aligned block holding the candidate at `first`.
    hole = dict.fromkeys(candidates, size)
    level = size * 2
    alive = candidates
    while level <= total and len(alive) > 0:
        free_here = set(_free_blocks(available, total, level))
        alive = [first for first in alive if first - first % level in free_here]
        for first in alive:
            hole[first] = level
        level *= 2
    return min(candidates, key=lambda first: (hole[first], first))


def largest_free_block(available: int, total: int) -> int:
    """Size of the largest aligned power-of-two block wholly available (0 if none): what the next partition may get."""
    size = 1
    best = 0
    while size <= total:
        if _free_blocks(available, total, size):
            best = size
        else:
            break
        size *= 2
    return best


def fragmentation(available: int, total: int) -> float:
    """Share of available IPUs outside the largest free aligned block: 0 when all free IPUs form one block."""
    free = bin(available).count("1")
    return 0.0 if free == 0 else 1.0 - largest_free_block(available, total) / free
