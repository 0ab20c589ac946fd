"""Aligned-block questions answered with a handful of big-integer operations.

Why not loop over blocks like placement.py: a scheduling cycle asks "does a block of N fit in this mask?" thousands
of times, so it must cost a microsecond. `best_fit` returns exactly what placement.place returns (a property test
checks it on random masks), so the block the scheduler decides on is the block the live server creates.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def align_mask(size: int, total: int) -> int:
    """Bit i set for every i that starts an aligned block of `size` inside a Pod of `total` IPUs."""
    mask = 0
    for first in range(0, total - size + 1, size):
        mask |= 1 << first
    return mask


def _runs(mask: int, size: int) -> int:
    """Bit i set iff IPUs i .. i+size-1 are all in mask (size a power of two)."""
    span = 1
    while span < size:
        mask &= mask >> span
        span <<= 1
    return mask


def aligned_starts(mask: int, size: int, total: int) -> int:
    return _runs(mask, size) & align_mask(size, total)


def has_block(mask: int, size: int, total: int) -> bool:
    # counting first saves the shifts when too few IPUs are free; on a Pod of 65,536 IPUs a count costs two
    # shifts, so sizes 1 and 2 (none or one shift) go straight to them
    if size > 2 and mask.bit_count() < size:
        return False
    span = 1  # _runs, inlined: this is the scheduler's most frequent question
    while span < size:
        mask &= mask >> span
        span <<= 1
    return mask & align_mask(size, total) != 0


def first_block(mask: int, size: int, total: int) -> int | None:
    """First IPU of the lowest aligned block of `size` wholly in mask, or None."""
    if size > 2 and mask.bit_count() < size:
        return None
    starts = aligned_starts(mask, size, total)
    return (starts & -starts).bit_length() - 1 if starts else None


def best_fit(mask: int, total: int, size: int) -> int | None:
    """First IPU of the buddy best-fit aligned block: the same answer as vipu.partition.placement.place."""
    runs = _runs(mask, size)
    starts = runs & align_mask(size, total)
    if not starts:
        return None
    level = size
    while level * 2 <= total:
        runs = runs & (runs >> level)  # now: runs of 2*level
        wider = runs & align_mask(level * 2, total)
        # free level-blocks that are not half of a free 2*level-block: their hole is exactly `level`
        exact = starts & ~(wider | (wider << level))
        if exact:
            return (exact & -exact).bit_length() - 1
        starts, level = wider, level * 2
    return (starts & -starts).bit_length() - 1


def block(first: int, size: int) -> int:
    return ((1 << size) - 1) << first


def usable_ipus(mask: int, size: int, total: int) -> int:
    """How many IPUs of mask lie in wholly free aligned blocks of `size` (what a job of that size could use)."""
    return aligned_starts(mask, size, total).bit_count() * size
