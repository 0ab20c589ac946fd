"""Aligned-block questions a scheduling cycle asks thousands of times, each a handful of big-integer operations.

`best_fit` is placement.place itself (placement.best_fit), so the block the scheduler decides on is the block the live server creates
(a property test checks both against a loop over every block).
"""

from __future__ import annotations

from vipu.partition.placement import align_mask, aligned_starts, best_fit, runs

__all__ = ["align_mask", "aligned_starts", "best_fit", "block", "first_block", "has_block", "usable_ipus"]


def has_block(mask: int, size: int, total: int) -> bool:
    # counting first saves the shifts when too few IPUs are free; on a Pod of 65,536 IPUs a count costs two
    # shifts, so sizes 1 and 2 (none or one shift) go straight to them
    if size > 2 and mask.bit_count() < size:
        return False
    span = 1  # runs(), inlined: this is the scheduler's most frequent question
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


def block(first: int, size: int) -> int:
    return ((1 << size) - 1) << first


def usable_ipus(mask: int, size: int, total: int) -> int:
    """How many IPUs of mask lie in wholly free aligned blocks of `size` (what a job of that size could use)."""
    return aligned_starts(mask, size, total).bit_count() * size
