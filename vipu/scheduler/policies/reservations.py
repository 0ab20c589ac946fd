"""Slurm's node_space_map for IPUs: which IPUs will be free from each future moment on.

Why a timeline: backfill must know when the top job could start and on which block, and must check that a smaller
job started now does not take that block before the top job gets it. Running jobs release their blocks at their
end-by time (start + time limit, the latest they can hold them); each reservation (or start) takes its block out of
its interval [start, end).

Why kept as releases plus a list of reserved blocks, not a mask per interval: the free IPUs without reservations
(`base`) only grow with time, so the IPUs free through all of [t, t + length) are base at t minus the blocks of
the reservations that overlap that span. A slot search then costs one AND per moment tried, whatever the length;
with a mask per interval between two end times it ANDed every interval the slot spans, and each reservation ANDed
itself out of every interval it spans: on 65,536 IPUs (masks of 8 KB, hundreds of end times) that was most of a
cycle. interval_timeline.py keeps the mask-per-interval timeline, which costs less on Pods up to 1,024 IPUs
(engine.SMALL_POD), and a property test checks that both give the same answers.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Iterable, Mapping

from vipu.scheduler.bits import best_fit, block, has_block

if TYPE_CHECKING:
    from vipu.scheduler.policies.base import RunningJob

Reserved = list  # [start, end, first IPU, size, IPUs released under it since (0: none)]


class Timeline:
    __slots__ = ("times", "base", "total", "reserved", "_starts", "_ends", "_by_end", "_first", "_released",
                 "_floor", "_made", "_overlaps")

    def __init__(self, now: float, free_now: int, releases: Iterable[tuple[float, int, int]], total: int,
                 groups: Mapping[float, tuple[list[int], int]] | None = None):
        """`releases`: (end_by, first IPU, size) of running jobs' blocks; `groups`: more of them, by end_by, as
        flat lists (first IPU, size, ...) with their mask (JobTable.release_groups). An overdue end_by counts as
        just after now, never now, so nothing is started on IPUs a job still holds."""
        self.total = total
        self.times = [now]  # now, then every distinct release time
        self.base = [free_now]  # base[k]: free from times[k] on, reservations aside
        self._released: list[list[int]] = [[]]  # [k]: the blocks released at times[k], as first IPU, size, ...
        soon = math.nextafter(now, math.inf)
        # flat lists of first IPU, size: thousands of pairs kept as tuples would wake the cycle collector
        by_time: dict[float, list[int]] = {}
        for at, first, size in releases:  # (clamping keeps the order; the overdue all land on `soon`)
            blocks = by_time.setdefault(at if at >= soon else soon, [])
            blocks.append(first)
            blocks.append(size)
        steps = {at: (blocks, blocks_mask(blocks, total)) for at, blocks in by_time.items()}
        for at, (blocks, mask) in (groups or {}).items():
            if at < soon:
                at = soon
            step = steps.get(at)
            steps[at] = (blocks, mask) if step is None else (step[0] + blocks, step[1] | mask)
        current = free_now
        for at in sorted(steps):
            blocks, mask = steps[at]
            current |= mask
            self.times.append(at)
            self.base.append(current)
            self._released.append(blocks)
        self.reserved: list[Reserved] = []  # by start
        self._starts: list[float] = []  # their starts
        self._ends: list[float] = []  # the reservations' end times, sorted: moments a slot may begin
        self._by_end: list[Reserved] = []  # the reservations in that order
        self._first: dict[tuple[int, int], float] = {}  # first_time() answers; base changes only in release_now
        self._floor: dict[tuple[int, int], tuple[float, float]] = {}  # (size, allowed) -> (length, last answer)
        self._made: list[Reserved] = []  # the reservations in the order reserve() made them
        # moment -> [len(_made) then, end, the reservations overlapping [moment, end), their union] (overlapping)
        self._overlaps: dict[float, list] = {}

    def first_time(self, size: int, allowed: int) -> float:
        """When the Pod without reservations first holds a block of `size` in `allowed`: no slot that earliest()
        finds begins before it, whatever is reserved (inf: never)."""
        key = (size, id(allowed))  # (the caller's masks live through the walk; hashing one reads all of it)
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
        None if it never does (held by partitions that never end, failed IPUs, or a small allocation).

        Why a search may begin where the last one of its size ended (_floor): between two evictions the timeline
        only loses free IPUs (reservations and starts), so no slot begins before the last answer for a job as long
        or longer; sjf plans its first jobs by time limit, shortest first, and each search tried again the moments
        the one before had ruled out. That answer is one of the moments a search tries (the first at which the Pod
        holds the size, a release or a reservation's end; none is ever taken away), so beginning there finds the
        same slot."""
        if not_before is not None:
            return self._earliest(size, length, allowed, not_before)
        key = (size, id(allowed))  # (see first_time)
        floor = self._floor.get(key)
        if floor is not None and floor[0] <= length:
            if floor[1] == math.inf:
                return None
            slot = self._earliest(size, length, allowed, floor[1])
        else:
            slot = self._earliest(size, length, allowed, None)
        self._floor[key] = (length, math.inf if slot is None else slot[0])
        return slot

    def _earliest(
        self, size: int, length: float, allowed: int, not_before: float | None
    ) -> tuple[float, int, int] | None:
        """earliest(), searched from `not_before` (None: from the first moment the Pod holds the size).

        The moments tried: the first at which the Pod without reservations holds such a block (not before
        `not_before`), then every later release and reservation end. A slot that fails at some moment also fails
        at a later reservation start with no release or end between: base is the same and more is reserved."""
        start = self.first_time(size, allowed)
        if start == math.inf:
            return None
        if not_before is not None and not_before > start:
            start = not_before
        times, base, ends, total = self.times, self.base, self._ends, self.total
        k = bisect_right(times, start) - 1  # the release interval `start` lies in
        e = bisect_right(ends, start)
        n, m = len(times), len(ends)
        # The reservations that overlap [start, end) and the union of their blocks, kept as both move forward:
        # those that begin before the new end join it; one that ended makes it be worked out again.
        reserved, starts = self.reserved, self._starts
        full = (1 << total) - 1  # (an AND with a negated mask costs three times as much)
        end = start + length
        active, taken = self.overlapping(start, end)
        p = bisect_left(starts, end)
        soonest_end = min((r[1] for r in active), default=math.inf)
        keep = full ^ taken
        by_end = self._by_end
        freed = 0  # the blocks of the reservations that ended since `taken` was last brought up to date
        moved = ""  # what changed since the last moment tried: "release", "end", or "" (tried first, or both)
        while True:
            # A moment after one that failed can only succeed with IPUs given back since: after nothing but a
            # release, only if it completes a block (base gained no block, more may be reserved); after nothing
            # but reservation ends, only if the Pod less what stays reserved holds a block.
            if moved == "release":
                worth = self._completes(k, size)
            elif moved == "end":
                worth = has_block(base[k] & allowed & (full ^ (taken & (full ^ freed))), size, total)
            else:
                worth = True
            if worth:
                end = start + length
                if soonest_end <= start:
                    taken, active = _without_ended(active, taken, start, total)
                    keep = full ^ taken
                    soonest_end = min((r[1] for r in active), default=math.inf)
                freed = 0
                joined = []
                while p < len(starts) and starts[p] < end:
                    r = reserved[p]
                    p += 1
                    if r[1] > start:
                        joined.append(r)
                        if r[1] < soonest_end:
                            soonest_end = r[1]
                if joined:
                    active += joined
                    taken |= _taken(joined, total)
                    keep = full ^ taken
                acc = base[k] & allowed & keep
                first = best_fit(acc, total, size)
                if first is not None:
                    return start, first, acc
            # the next moment at which anything is given back: a release or a reservation's end
            after_release = times[k + 1] if k + 1 < n else math.inf
            after_end = ends[e] if e < m else math.inf
            if after_release == after_end == math.inf:
                return None
            moved = "release" if after_release < after_end else "end" if after_end < after_release else ""
            if after_release <= after_end:
                start, k = after_release, k + 1
            else:
                start = after_end
            while e < m and ends[e] <= start:
                r = by_end[e]
                freed |= block(r[2], r[3])
                e += 1

    def overlapping(self, start: float, end: float) -> tuple[list[Reserved], int]:
        """The reservations that overlap [start, end) and the union of their blocks (a new list: the search grows it).

        Why kept by moment: the searches of a walk begin at a few moments (now, the first release that holds a
        size, the last answer), and building the union afresh for each ORed a hundred blocks of 8 KB masks. The
        union kept for a moment and an end stays right for a later end and more reservations: those made since
        that overlap the old span, and those that begin between the old end and the new one, join it."""
        kept = self._overlaps.get(start)
        made, reserved, starts = self._made, self.reserved, self._starts
        if kept is None or end < kept[1]:
            joined = _ending_after(reserved[:bisect_left(starts, end)], start)
            kept = self._overlaps[start] = [len(made), end, joined, _taken(joined, self.total)]
        else:
            seen, before = kept[0], kept[1]
            joined = _ending_after([r for r in made[seen:] if r[0] < before], start)
            joined += _ending_after(reserved[bisect_left(starts, before):bisect_left(starts, end)], start)
            if joined:
                kept[2] = kept[2] + joined
                kept[3] |= _taken(joined, self.total)
            kept[0], kept[1] = len(made), end
        return list(kept[2]), kept[3]

    def _completes(self, k: int, size: int) -> bool:
        """Might the blocks released at times[k] complete a free aligned block of `size` (one that holds an IPU
        not free before)? Released blocks are aligned: one of `size` or more is such a block itself, a smaller one
        lies in one block of `size`, which must now be wholly free."""
        released = self._released[k]
        if len(released) > 32:
            return True  # many at once (the overdue, or jobs started together): not worth asking one by one
        base, whole = self.base[k], (1 << size) - 1
        for i in range(0, len(released), 2):
            first, n = released[i], released[i + 1]
            if n >= size or first % n or n & (n - 1):
                return True
            if (base >> (first - first % size)) & whole == whole:
                return True
        return False

    def reserve(self, start: float, end: float, first_ipu: int, size: int) -> None:
        """Take the block out of [start, end): a job started now or a reservation for a blocked job."""
        if start < end:
            k = bisect_right(self._starts, start)
            self._starts.insert(k, start)
            self.reserved.insert(k, [start, end, first_ipu, size, 0])
            self._made.append(self.reserved[k])
            at = bisect_right(self._ends, end)
            self._ends.insert(at, end)
            self._by_end.insert(at, self.reserved[k])

    def release_now(self, blk: int) -> None:
        """A preempted job's block is free from now on, reserved or not (reservations made later may take it)."""
        self._first.clear()
        self._floor.clear()
        self._overlaps.clear()  # (the blocks released under reservations change their unions)
        for k in range(len(self.base)):
            self.base[k] |= blk
        for r in self.reserved:
            if block(r[2], r[3]) & blk:
                r[4] |= blk


def _without_ended(active: list[Reserved], taken: int, now: float, total: int) -> tuple[int, list[Reserved]]:
    """`taken` (the IPUs of `active`) less the reservations that ended by `now`, and those left. Two reservations
    may share IPUs at different times, so an ended one's block is taken out directly only if no other shares it."""
    left = [r for r in active if r[1] > now]
    for r in active:
        if r[1] <= now:
            first, size = r[2], r[3]
            if r[4] or any(o is not r and o[2] < first + size and first < o[2] + o[3] for o in active):
                return _taken(left, total), left  # (an eviction cut it, or another holds some of its IPUs)
            taken ^= block(first, size)
    return taken, left


def _ending_after(reserved: list[Reserved], start: float) -> list[Reserved]:
    """Those of the reservations (all beginning before a span's end) that end after the span's `start`."""
    return [r for r in reserved if r[1] > start]


def _taken(reserved: list[Reserved], total: int) -> int:
    """The IPUs the reservations hold (less any released under them by an eviction)."""
    pieces, cut = [], 0
    for r in reserved:
        if r[4]:
            cut |= block(r[2], r[3]) & ~r[4]
        else:
            pieces.append(r[2])
            pieces.append(r[3])
    return blocks_mask(pieces, total) | cut if cut else blocks_mask(pieces, total)


def without_runs(groups: Mapping[float, tuple[list[int], int]],
                 runs: Iterable[RunningJob]) -> dict[float, tuple[list[int], int]]:
    """Release groups (JobTable.release_groups) less the blocks of `runs`, which are among them: jobs a walk evicted,
    whose IPUs are free now, and released later only by the starts that take them. Why not group the running jobs
    left afresh: on 65,536 IPUs that made a mask of 8 KB for each of about 30 end times from 5,000 jobs, in the
    cycle that evicts after a wave; a group that loses a few costs a filter of its blocks and an XOR each."""
    out, by_end = dict(groups), {}
    for r in runs:
        by_end.setdefault(r.end_by, []).append(r)
    for end_by, evicted in by_end.items():
        blocks, mask = out[end_by]
        firsts = {r.first_ipu for r in evicted}  # (running jobs hold disjoint blocks: a first IPU names one)
        kept = [n for k in range(0, len(blocks), 2) if blocks[k] not in firsts for n in blocks[k:k + 2]]
        for r in evicted:
            mask ^= block(r.first_ipu, r.ipus)
        if kept:
            out[end_by] = (kept, mask)
        else:
            del out[end_by]
    return out


def blocks_mask(blocks: list[int], total: int) -> int:
    """The mask of the blocks, given as first IPU, size, first IPU, size, ... Why bytes: on a Pod of 65,536 IPUs a
    mask is 8 KB, and thousands of jobs run; setting their bytes and converting once costs a tenth of OR-ing one big
    integer per job (for a few dozen blocks, or a Pod of a few thousand IPUs, the integers cost less). Blocks of 8
    IPUs or more are aligned (placement.py), so they fill whole bytes; smaller ones set bits of one byte."""
    pairs = zip(blocks[::2], blocks[1::2])
    if len(blocks) < 128 or total <= 4096:  # (a few dozen blocks, or small masks: OR-ing integers is cheaper)
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
