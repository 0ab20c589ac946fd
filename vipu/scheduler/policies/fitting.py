"""Which waiting sizes could start now, kept during a walk so that the walk knows when to stop (nothing fits).

Why kept with a witness: after each start the answer used to be worked out again for every size, a few operations
on masks as wide as the Pod; on a Pod of 65,536 IPUs they cost tens of microseconds each, and a cycle in which a
thousand jobs end starts a thousand. A start only takes IPUs, so a size that did not fit still does not, and one
that fit still does unless the start took IPUs of the block found for it (its witness): only those are worked out
again. An eviction frees IPUs: a size that fit without evicting still does, the others are worked out again (sjf's
walk on 65,536 IPUs evicted for two hundred jobs in one cycle, and each time worked out every size anew). Every
other change (a reservation, a lazy reservation that may begin early) drops the answer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from vipu.scheduler.bits import first_block, has_block

if TYPE_CHECKING:
    from vipu.scheduler.policies.engine import _Walk


class Fitting:
    __slots__ = ("sizes", "until", "_taken", "_evicted")

    def __init__(self) -> None:
        self.sizes: list[tuple[int, bool, int]] | None = None  # (size, only by eviction, witness block's first IPU)
        self.until = -math.inf  # the answer depends on the reservations that begin before this
        self._taken: list[tuple[int, int]] = []  # blocks (first IPU, size) started since it was worked out
        self._evicted = False  # running jobs were evicted since: the sizes that fit only by evicting may fit now

    def drop(self) -> None:
        self.sizes = None

    def evicted(self) -> None:
        if self.sizes is not None:
            self._evicted = True

    def started(self, first: int, size: int) -> None:
        if self.sizes is not None:
            self._taken.append((first, size))

    def any_fits(self, walk: _Walk) -> bool:
        if self.sizes is None:
            self._taken.clear()
            self._evicted = False
            self.sizes, self.until = _fitting(walk, list(walk.remaining))
        elif self._taken or self._evicted:
            taken, self._taken = self._taken, []
            evicted, self._evicted = self._evicted, False
            kept, again = [], []
            for entry in self.sizes:
                size, by_eviction, w = entry
                if evicted and by_eviction:
                    again.append(size)
                    continue
                for f, n in taken:  # (a loop, not any() over a generator: this runs after every start)
                    if f < w + size and w < f + n:
                        again.append(size)
                        break
                else:
                    kept.append(entry)
            if evicted:  # (a size listed neither way found no block even by evicting: it may now)
                listed = {entry[0] for entry in self.sizes}
                again += [size for size in walk.remaining if size not in listed]
            if again:
                found, until = _fitting(walk, again)
                kept += found
                self.until = max(self.until, until)
            self.sizes = kept
        remaining, preemptors = walk.remaining, walk.preemptors
        return any((preemptors.get(s, 0) if by_eviction else remaining[s]) > 0 for s, by_eviction, _ in self.sizes)


def _fitting(walk: _Walk, sizes: list[int]) -> tuple[list[tuple[int, bool, int]], float]:
    shortest, now, avail, total = walk.shortest or {}, walk.now, walk.avail, walk.total
    remaining, preemptors = walk.remaining, walk.preemptors
    floor = walk.limit_floor or 0.0  # no job still to come runs shorter (engine.run)
    fitting = []
    until = -math.inf
    for size in sizes:
        if remaining[size] <= 0:
            continue  # counts only go down during a walk
        end = now + max(shortest.get(size, 0.0), floor)
        # (no block in the free IPUs: none outside the reservations either, which need not be looked at)
        if has_block(avail, size, total):
            until = max(until, end)
            w = first_block(walk.unreserved(avail, end), size, total)
            if w is not None:
                fitting.append((size, False, w))
                continue
        if preemptors.get(size, 0) > 0:
            until = max(until, end)
            # (evicting frees no reserved IPU for it: try_preempt leaves the reservations out, so does this)
            w = first_block(walk.unreserved(avail | walk.evictable(), end) & walk.healthy, size, total)
            if w is not None:
                fitting.append((size, True, w))
    return fitting, until
