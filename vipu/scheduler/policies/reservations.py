"""Slurm's node_space_map for IPUs: which IPUs will be free from each future moment on.

Why a timeline of masks: backfill must know when the top job could start and on which block, and must check that
a smaller job started now does not take that block before the top job gets it. Running jobs release their blocks
at their end-by time (start + time limit, the latest they can hold them); each reservation removes its block from
the masks of its interval. Interval k covers [times[k], times[k+1]) and the last one runs forever.

`base` keeps the masks without reservations; it only grows with time, so a binary search on it skips every moment
at which the job could not fit even if nothing were reserved, and the linear scan starts where it might.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Iterable

from vipu.scheduler.bits import best_fit, block, has_block


class Timeline:
    __slots__ = ("times", "masks", "base", "total", "_first")

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int, int]], total: int):
        """`releases`: (end_by, first IPU, size) of running jobs' blocks; an overdue end_by counts as just after
        now, never now, so nothing is started on IPUs a job still holds."""
        self.total = total
        self.times = [now]
        self.masks = [free_now]
        soon = math.nextafter(now, math.inf)
        # flat lists of first IPU, size: thousands of pairs kept as tuples would wake the cycle collector
        by_time: dict[float, list[int]] = {}
        for at, first, size in releases:  # (clamping keeps the order; the overdue all land on `soon`)
            blocks = by_time.setdefault(at if at >= soon else soon, [])
            blocks.append(first)
            blocks.append(size)
        current = free_now
        for at in sorted(by_time):
            current |= _union(by_time[at], total)
            self.times.append(at)
            self.masks.append(current)
        self.base = list(self.masks)
        self._first: dict[tuple[int, int], float] = {}  # first_time() answers; base changes only in release_now

    def _first_possible(self, size: int, allowed: int, lo: int) -> int:
        """The first interval from `lo` on at which the Pod without reservations holds a block of `size` in
        `allowed` (len(times): none). Base only grows with time, so that is `lo` or the first such interval of all,
        which begins at first_time()'s moment (splits insert copies of the interval before, never move it)."""
        at = self.first_time(size, allowed)
        return len(self.times) if at == math.inf else max(lo, bisect_left(self.times, at))

    def first_time(self, size: int, allowed: int) -> float:
        """When the Pod without reservations first holds a block of `size` in `allowed`: no slot that earliest()
        finds begins before it, whatever is reserved (inf: never)."""
        key = (size, allowed)
        at = self._first.get(key)
        if at is None:
            base, total = self.base, self.total
            lo, hi = 0, len(base)
            if not has_block(base[-1] & allowed, size, total):
                lo = hi
            while lo < hi:  # a binary search: base grows with time
                mid = (lo + hi) // 2
                if has_block(base[mid] & allowed, size, total):
                    hi = mid
                else:
                    lo = mid + 1
            at = self._first[key] = self.times[lo] if lo < len(self.times) else math.inf
        return at

    def earliest(
        self, size: int, length: float, allowed: int, not_before: float | None = None
    ) -> tuple[float, int, int] | None:
        """(start, first_ipu, mask placed on) of the earliest slot where a block of `size` stays free for `length`;
        None if it never does (held by partitions that never end, failed IPUs, or a small allocation)."""
        times, masks, total = self.times, self.masks, self.total
        n = len(times)
        lo = 0 if not_before is None else max(0, bisect_right(times, not_before) - 1)
        i = self._first_possible(size, allowed, lo)
        window = _Window(masks, i)
        while i < n:
            start = times[i] if not_before is None or times[i] >= not_before else not_before
            if (masks[i] & allowed).bit_count() >= size:  # (else the slot's mask, a part of it, holds no block)
                end = start + length  # never earlier than the last slot's: the window only moves forward
                window.drop_before(i)
                while window.stop < n and times[window.stop] < end:
                    window.push()
                acc = window.value() & allowed  # the masks of every interval the slot touches, ANDed
                first = best_fit(acc, total, size)
                if first is not None:
                    return start, first, acc
            i += 1
        return None

    def _split(self, at: float) -> int:
        k = bisect_left(self.times, at)
        if k < len(self.times) and self.times[k] == at:
            return k
        self.times.insert(k, at)
        self.masks.insert(k, self.masks[k - 1])
        self.base.insert(k, self.base[k - 1])
        return k

    def reserve(self, start: float, end: float, blk: int) -> None:
        """Take `blk` out of [start, end): a job started now or a reservation for a blocked job."""
        first, last = self._split(start), self._split(end)
        keep = ((1 << self.total) - 1) ^ blk  # (an AND with a negative ~blk costs three times as much)
        masks = self.masks
        for k in range(first, last):
            masks[k] &= keep

    def release_now(self, blk: int) -> None:
        """A preempted job's block is free from now on."""
        self._first.clear()
        for k in range(len(self.masks)):
            self.masks[k] |= blk
            self.base[k] |= blk


def _union(blocks: list[int], total: int) -> int:
    """The mask of the blocks, given as first IPU, size, first IPU, size, ... Why bytes: on a Pod of 65,536 IPUs a
    mask is 8 KB, and thousands of jobs run; setting their bytes and converting once costs a tenth of OR-ing one big
    integer per job. Blocks of 8 IPUs or more are aligned (placement.py), so they fill whole bytes; smaller ones set
    bits of one byte."""
    pairs = zip(blocks[::2], blocks[1::2])
    if len(blocks) < 16:
        acc = 0
        for first, size in pairs:
            acc |= block(first, size)
        return acc
    buf = bytearray((total + 7) >> 3)
    rest = 0
    for first, size in pairs:
        if not (first | size) & 7:
            buf[first >> 3:(first + size) >> 3] = b"\xff" * (size >> 3)
        elif size < 8 and (first & 7) + size <= 8:
            buf[first >> 3] |= ((1 << size) - 1) << (first & 7)
        else:  # not aligned (never made by placement): as a big integer
            rest |= block(first, size)
    return int.from_bytes(buf, "little") | rest


class _Window:
    """The AND of masks[start:stop] as both ends move forward, each mask ANDed in about three times in all (a queue
    of two stacks), where ANDing each slot's masks afresh cost their number for every slot tried: on a large Pod a
    search tries dozens of slots, each a dozen intervals long, with masks of 8 KB."""

    __slots__ = ("masks", "start", "stop", "_front", "_back", "_back_and")

    def __init__(self, masks: list[int], start: int):
        self.masks, self.start, self.stop = masks, start, start
        self._front: list[int] = []  # ANDs of the oldest masks: [-1] covers start up to where _back begins
        self._back: list[int] = []  # the newer masks, oldest first
        self._back_and: int | None = None

    def push(self) -> None:
        mask = self.masks[self.stop]
        self._back.append(mask)
        self._back_and = mask if self._back_and is None else self._back_and & mask
        self.stop += 1

    def drop_before(self, index: int) -> None:
        if index >= self.stop:  # nothing of the window is left: it starts afresh there
            self.start = self.stop = index
            self._front, self._back, self._back_and = [], [], None
            return
        while self.start < index:
            if not self._front:
                acc = None
                for mask in reversed(self._back):
                    acc = mask if acc is None else acc & mask
                    self._front.append(acc)
                self._back, self._back_and = [], None
            self._front.pop()
            self.start += 1

    def value(self) -> int:
        if not self._front:
            return self._back_and  # type: ignore[return-value]
        return self._front[-1] if self._back_and is None else self._front[-1] & self._back_and
