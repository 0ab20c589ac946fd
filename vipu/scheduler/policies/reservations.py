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

from vipu.scheduler.bits import best_fit, has_block


class Timeline:
    __slots__ = ("times", "masks", "base", "total", "_first")

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int]], total: int):
        """`releases`: (end_by, block) of running jobs; an overdue end_by counts as just after now, never now, so
        nothing is started on IPUs a job still holds."""
        self.total = total
        self.times = [now]
        self.masks = [free_now]
        soon = math.nextafter(now, math.inf)
        times, masks = self.times, self.masks
        current = free_now
        for at, blk in sorted(releases):  # (clamping keeps the order; the overdue all land on `soon`)
            if at < soon:
                at = soon
            current |= blk
            if at == times[-1]:
                masks[-1] = current
            else:
                times.append(at)
                masks.append(current)
        self.base = list(masks)
        self._first: dict[tuple[int, int], float] = {}  # first_time() answers; base changes only in release_now

    def _first_possible(self, size: int, allowed: int, lo: int) -> int:
        base, total = self.base, self.total
        hi = len(base)
        if not has_block(base[-1] & allowed, size, total):
            return hi
        while lo < hi:
            mid = (lo + hi) // 2
            if has_block(base[mid] & allowed, size, total):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def first_time(self, size: int, allowed: int) -> float:
        """When the Pod without reservations first holds a block of `size` in `allowed`: no slot that earliest()
        finds begins before it, whatever is reserved (inf: never)."""
        key = (size, allowed)
        at = self._first.get(key)
        if at is None:
            i = self._first_possible(size, allowed, 0)
            at = self._first[key] = self.times[i] if i < len(self.times) else math.inf
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
        while i < n:
            start = times[i] if not_before is None or times[i] >= not_before else not_before
            acc = masks[i] & allowed
            if acc.bit_count() >= size:
                end = start + length
                j = i + 1
                while j < n and times[j] < end and acc.bit_count() >= size:
                    acc &= masks[j]
                    j += 1
                if has_block(acc, size, total):
                    return start, best_fit(acc, total, size), acc  # type: ignore[return-value]
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
        keep = ~blk
        masks = self.masks
        for k in range(first, last):
            masks[k] &= keep

    def release_now(self, blk: int) -> None:
        """A preempted job's block is free from now on."""
        self._first.clear()
        for k in range(len(self.masks)):
            self.masks[k] |= blk
            self.base[k] |= blk
