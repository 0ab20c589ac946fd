"""Which waiting sizes could start now, kept during a walk so that the walk knows when to stop (nothing fits).

Why kept with a witness: after each start the answer used to be worked out again for every size, a few operations
on masks as wide as the Pod; on a Pod of 65,536 IPUs they cost tens of microseconds each, and a cycle in which a
thousand jobs end starts a thousand. A start only takes IPUs, so a size that did not fit still does not, and one
that fit still does unless the start took IPUs of the block found for it (its witness): only those are worked out
again. An eviction frees IPUs: a size that fit without evicting still does, and the others are looked for only
around the victims' blocks (sjf's walk on 65,536 IPUs evicted for two hundred jobs in one cycle, and each time
worked out every size anew over the whole Pod). Every other change (a reservation, a lazy reservation that may
begin early) drops the answer.

Why a size whose witness a start took may wait to be worked out again: the walk only asks whether some size fits,
and after most starts another size still has its witness. While the walk has no reservation and makes estimates
(every reservation then drops the answer), whether a size fits does not depend on when it is worked out: a start
takes IPUs, so a size that fits later fitted before. So such a size is kept aside (`_stale`) and worked out only
once no other size answers (in a wave of two thousand starts, a placement on the racks and more per start).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from vipu.scheduler.bits import first_block, has_block
from vipu.scheduler.policies.rack_masks import RACK

if TYPE_CHECKING:
    from vipu.scheduler.policies.engine import _Walk


class Fitting:
    __slots__ = ("sizes", "until", "fresh", "_taken", "_given", "_stale")

    def __init__(self) -> None:
        # (size, only by eviction, the first IPU of a block found for it, the end it was looked for up to)
        self.sizes: list[tuple[int, bool, int, float]] | None = None
        self.until = -math.inf  # the answer depends on the reservations that begin before this
        # True: the last answer was that something fits and nothing changed since; the walk clears it when a size's
        # count reaches zero, and asks again only then (asking after each of 10,000 jobs cost a tenth of a walk)
        self.fresh = False
        self._taken: list[tuple[int, int]] = []  # blocks (first IPU, size) started since it was worked out
        self._given: list[tuple[int, int]] = []  # blocks of the jobs evicted since: sizes may fit there now
        self._stale: list[int] = []  # sizes whose witness a start took, not worked out again yet

    def drop(self) -> None:
        self.sizes = None
        self._stale = []
        self.fresh = False

    def evicted(self, first: int, size: int) -> None:
        self.fresh = False
        if self.sizes is not None:
            self._given.append((first, size))

    def started(self, first: int, size: int) -> None:
        sizes = self.sizes
        if sizes is None:
            self.fresh = False
            return
        for s, _, w, _ in sizes:  # (a loop, not any() over a generator: this runs after every start)
            if first < w + s and w < first + size:
                self.fresh = False
                self._taken.append((first, size))
                return
        # It took no witness: every size that fitted still fits on its own, so the last answer stands. (In a wave of
        # two thousand starts more than half take none, and the walk then asked again after each.)

    def any_fits(self, walk: _Walk) -> bool:
        if self.sizes is None:
            self._taken.clear()
            self._given.clear()
            self.sizes, self.until = _fitting(walk, list(walk.remaining))
        elif self._taken or self._given:
            taken, self._taken = self._taken, []
            given, self._given = self._given, []
            kept, again = [], []
            for entry in self.sizes:
                size, _, w, _ = entry
                for f, n in taken:  # (a loop, not any() over a generator: this runs after most starts that took one)
                    if f < w + size and w < f + n:
                        again.append(size)
                        break
                else:
                    kept.append(entry)
            if given:
                # An eviction hands its victims' IPUs from the evictable to the free, and the job that evicted takes
                # its block: free and evictable together only lose that block. So a size that fit by evicting
                # still does unless that block hit its witness, and one that did not fit even so still does not;
                # either may now fit without evicting, on a block that holds or lies in a victim's (_freed()).
                # (an entry worked out for an earlier end, before sjf's floor rose, is worked out again whole)
                listed = {entry[0] for entry in self.sizes}
                for k, entry in enumerate(kept):
                    if entry[1]:
                        if entry[3] != _end(walk, entry[0]):
                            again.append(entry[0])
                            kept[k] = None  # type: ignore[call-overload]
                            continue
                        found = _freed(walk, entry[0], given)
                        if found is not None:
                            kept[k] = found
                kept = [entry for entry in kept if entry is not None]
                stale = self._stale
                for size in walk.remaining:
                    if size not in listed and walk.remaining[size] > 0:
                        found = _freed(walk, size, given)
                        if found is not None:
                            kept.append(found)
                            if size in stale:
                                stale.remove(size)
            if again:
                if walk.estimates and not walk.reservations:  # worked out once no other size answers (above)
                    self._stale += [size for size in again if size not in self._stale]
                else:
                    found, until = _fitting(walk, again)
                    kept += found
                    self.until = max(self.until, until)
            self.sizes = kept
        self.fresh = self._answer(walk)
        if not self.fresh and self._stale:
            found, until = _fitting(walk, self._stale)
            self._stale = []
            self.sizes += found
            self.until = max(self.until, until)
            self.fresh = self._answer(walk)
        return self.fresh

    def _answer(self, walk: _Walk) -> bool:
        remaining, preemptors = walk.remaining, walk.preemptors
        for s, by_eviction, _, _ in self.sizes:  # type: ignore[union-attr]
            # (a loop, not any() over a generator: asked after each of a wave's two thousand starts)
            if (preemptors.get(s, 0) if by_eviction else remaining[s]) > 0:
                return True
        return False


def _end(walk: _Walk, size: int) -> float:
    """The earliest end of a job still to come of that size (no job still to come runs shorter: engine.run)."""
    return walk.now + max((walk.shortest or {}).get(size, 0.0), walk.limit_floor or 0.0)


def _freed(walk: _Walk, size: int, given: list[tuple[int, int]]) -> tuple[int, bool, int, float] | None:
    """The entry of a size that fits without evicting on a block that holds, or lies in, one of the `given` blocks
    (those of evicted jobs), or None. Only the aligned stretch around each is read: a block of the size that was not
    wholly free before and is now holds IPUs of a victim, so it lies in the victim's block or holds it whole."""
    end = _end(walk, size)
    walk._fitting.until = max(walk._fitting.until, end)  # (at least what _fitting() records for it)
    reserved, racks = None, walk.racks
    for first, n in given:
        span = size if size > n else n
        at = first - first % span
        stretch = (1 << span) - 1
        if racks is not None and span <= RACK:  # (a stretch in one rack: its word, not a shift of the Pod's mask)
            free = (racks.words[at // RACK] >> at % RACK) & stretch
        else:
            free = (walk.avail >> at) & stretch
        if not has_block(free, size, span):
            continue
        if reserved is None:
            reserved = walk.reserved_over(end)
        if reserved:
            free &= ~(reserved >> at) & stretch
        w = first_block(free, size, span)
        if w is not None:
            return (size, False, at + w, end)
    return None


def _fitting(walk: _Walk, sizes: list[int]) -> tuple[list[tuple[int, bool, int, float]], float]:
    shortest, now, avail, total = walk.shortest or {}, walk.now, walk.avail, walk.total
    remaining, preemptors, racks = walk.remaining, walk.preemptors, walk.racks
    floor = walk.limit_floor or 0.0  # no job still to come runs shorter (engine.run); as _end()
    fitting = []
    until = -math.inf
    for size in sizes:
        if remaining[size] <= 0:
            continue  # counts only go down during a walk
        end = now + max(shortest.get(size, 0.0), floor)
        if racks is not None and not walk._lazy and not walk.reserved_over(end):
            # no reservation in the way: the racks kept for placement answer at once (rack_masks.py)
            w = racks.place(size)
            if w is not None:
                until = max(until, end)
                fitting.append((size, False, w, end))
                continue
        # (no block in the free IPUs: none outside the reservations either, which need not be looked at; the
        # racks answer whether there is one without the dozen operations on the Pod's mask has_block() makes)
        elif racks.place(size) is not None if racks is not None else has_block(avail, size, total):
            until = max(until, end)
            w = first_block(walk.unreserved(avail, end), size, total)
            if w is not None:
                fitting.append((size, False, w, end))
                continue
        if preemptors.get(size, 0) > 0:
            until = max(until, end)
            # (evicting frees no reserved IPU for it: try_preempt leaves the reservations out, so does this)
            w = first_block(walk.unreserved(avail | walk.evictable(), end) & walk.healthy, size, total)
            if w is not None:
                fitting.append((size, True, w, end))
    return fitting, until
