"""Topology-aware placement of a partition: which aligned block of IPUs it gets.

Why aligned power-of-two blocks: V-IPU partitions are powers of two "due to the required ring structure". With IPUs
numbered machine by machine (hardware/topology.py), the block [k*size, (k+1)*size) is always a sub-grid of the
IPU-Link grid (part of a machine, whole adjacent machines, or whole ILDs), so it holds a ring, and two partitions
never share an IPU-Link: each one's ring traffic stays on its own links, which is why placement never lets blocks
overlap.

Why buddy-style best fit: among the free aligned blocks of the requested size we take the one whose largest free
aligned enclosing block is smallest, i.e. we carve from the smallest hole that fits and keep large holes whole.
This is the buddy system's rule; it bounds fragmentation (a free set of F IPUs always holds an aligned block of the
largest power of two that the holes' sizes allow) and every step is a few operations on whole masks (big integers), never a loop over blocks, so placement costs
microseconds on a Pod256 and stays well under a millisecond on 65,536 IPUs. Ties go to the lowest IPU number, so
placement is deterministic.

Everything here is a pure function of bitmasks: bit i set = IPU i is available (free, healthy and inside the
allocation the request may use). The controller and the trace replay both call it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable


def block_mask(first: int, size: int) -> int:
    return ((1 << size) - 1) << first


def mask_of(ipus) -> int:
    """The mask of the IPUs. Built as bytes and converted once: OR-ing bit by bit copies a mask as wide as the Pod
    for every IPU, which on 65,536 IPUs took a second."""
    buf = bytearray()
    for ipu in ipus:
        byte = ipu >> 3
        if byte >= len(buf):
            buf.extend(bytes(byte + 1 - len(buf)))
        buf[byte] |= 1 << (ipu & 7)
    return int.from_bytes(buf, "little")


def ipus_in(mask: int) -> list[int]:
    """The IPUs of a mask, lowest first, read from its binary digits (one pass, not one shift per IPU)."""
    digits = bin(mask)[:1:-1]  # lowest bit first, without the "0b"
    return [i for i, digit in enumerate(digits) if digit == "1"] if mask > 0 else []


@lru_cache(maxsize=None)
def align_mask(size: int, total: int) -> int:
    """Bit i set for every i that starts an aligned block of `size` inside a Pod of `total` IPUs."""
    pattern, width = 1, size  # doubled up to the Pod's width: log2(total / size) steps, not total / size
    while width < total:
        pattern |= pattern << width
        width *= 2
    return pattern & ((1 << (total - size + 1)) - 1) if total >= size else 0


def runs(mask: int, size: int) -> int:
    """Bit i set iff IPUs i .. i+size-1 are all in mask (size a power of two)."""
    span = 1
    while span < size:
        mask &= mask >> span
        span <<= 1
    return mask


def aligned_starts(mask: int, size: int, total: int) -> int:
    """Bit i set for every aligned block of `size` wholly in mask, at its first IPU."""
    return runs(mask, size) & align_mask(size, total)


def best_fit(available: int, total: int, size: int) -> int | None:
    """First IPU of the best aligned block of `size` IPUs among `available`, or None if there is none.

    `total` is the number of IPUs in the Pod; `size` must be a power of two (rules.py checks that first). Policy
    files call it as vipu.scheduler.bits.best_fit, and an error of theirs in calling it names it so."""
    free = runs(available, size)
    starts = free & align_mask(size, total)
    if not starts:
        return None
    level = size
    while level * 2 <= total:
        free = free & (free >> level)  # now: runs of 2*level
        wider = free & align_mask(level * 2, total)
        # free level-blocks that are not half of a free 2*level-block: their hole is exactly `level` (both halves of
        # a free 2*level-block are free level-blocks, so an XOR takes them out: an AND with a negated mask costs
        # three times as much on a large Pod)
        exact = starts ^ (wider | (wider << level))
        if exact:
            return (exact & -exact).bit_length() - 1
        starts, level = wider, level * 2
    return (starts & -starts).bit_length() - 1


place = best_fit  # placing a partition is taking the best fit: the name the partition code calls it by


def largest_free_block(available: int, total: int) -> int:
    """Size of the largest aligned power-of-two block wholly available (0 if none): what the next partition may get."""
    size, best, free = 1, 0, available
    while size <= total:
        if not free & align_mask(size, total):
            break
        best = size
        free &= free >> size  # now: runs of 2*size
        size *= 2
    return best


def fragmentation(available: int, total: int) -> float:
    """Share of available IPUs outside the largest free aligned block: 0 when all free IPUs form one block."""
    free = bin(available).count("1")
    return 0.0 if free == 0 else 1.0 - largest_free_block(available, total) / free


def node_region(machines: Iterable[int], ipus: int, per_machine: int) -> int | None:
    """The IPUs a job of `ipus` IPUs that must hold every one of `machines` (sbatch -w) may be placed on: the one
    aligned block of max(ipus, per_machine) IPUs around them (their machine for a job smaller than a machine).
    None when no such block holds them all: a job's IPUs are one aligned block, so machines further apart than its
    size allows cannot all be its own."""
    listed = sorted(set(machines))
    span = max(ipus, per_machine)
    low, high = listed[0] * per_machine, (listed[-1] + 1) * per_machine - 1
    start = low - low % span
    return block_mask(start, span) if high < start + span else None
