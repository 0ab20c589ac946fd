"""The backfill timeline of a small Pod: one mask of free IPUs per interval between two moments at which anything
changes, each reservation ANDed out of every interval it spans.

Why two timelines: a slot search here ANDs every interval the slot spans and a reservation ANDs itself out of
every interval it spans; with masks of 128 bytes (a Pod1024) that costs less than the Python upkeep of
reservations.py's list of reserved blocks (bench_scheduler_cycle's Pod256 and Pod1024 rows), and with masks
of 8 KB (65,536 IPUs) it cost most of a cycle. Both give the same answers: tests/scheduler/test_fast_structures.py
checks them against each other on random states."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Iterable, Mapping

from vipu.scheduler.bits import best_fit, block
from vipu.scheduler.policies.reservations import Timeline


class IntervalTimeline:
    __slots__ = ("times", "masks", "base", "total", "_first")

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int, int]], total: int,
                 groups: Mapping[float, tuple[list[int], int]] | None = None):
        """As reservations.Timeline's: the same masks from each release on."""
        steps = Timeline(now, free_now, releases, total, groups)
        self.total, self.times, self.base = total, steps.times, steps.base
        self.masks = list(self.base)
        self._first: dict[tuple[int, int], float] = {}  # first_time() answers; base changes only in release_now

    def _first_possible(self, size: int, allowed: int, lo: int) -> int:
        """The first interval from `lo` on at which the Pod without reservations holds a block of `size` in
        `allowed` (len(times): none). Base only grows with time, so that is `lo` or the first such interval of all,
        which begins at first_time()'s moment (splits insert copies of the interval before, never move it)."""
        at = self.first_time(size, allowed)
        return len(self.times) if at == math.inf else max(lo, bisect_left(self.times, at))

    # the same search: base holds the same masks, with copies where reservations split an interval
    first_time = Timeline.first_time

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

    def reserve(self, start: float, end: float, first_ipu: int, size: int) -> None:
        """Take the block out of [start, end): a job started now or a reservation for a blocked job."""
        blk = block(first_ipu, size)
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
