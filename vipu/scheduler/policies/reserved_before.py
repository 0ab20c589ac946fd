"""The IPUs that a walk's reservations hold at some moment before a given end, while the walk still makes them
(its first max_job_test jobs; engine._Walk.freeze() keeps prefixes for the rest), with a key for that answer.

Why kept: each of those jobs asks it once or twice (does it fit now without touching a reservation, whom may it
evict), and ORing every reservation's block afresh for each question cost a hundred ORs of 8 KB masks a job on
65,536 IPUs. The reservations are only appended to, and the ends asked for mostly grow (sjf walks by time limit),
so the last answer is kept and only the reservations that join it are ORed in.

Why a key: the walk remembers answers by what a job may use (preemption searches that found nothing, where a
search for victims may start), and hashing a mask reads all of it. The key is the indices of the reservations in
the union: equal keys, equal masks.
"""

from __future__ import annotations


class ReservedBefore:
    __slots__ = ("reservations", "_members", "_mask")

    def __init__(self, reservations: list[tuple[float, int]]):
        self.reservations = reservations  # the walk's own list of (start, block), only appended to
        self._members: tuple[int, ...] = ()
        self._mask = 0

    def before(self, end: float) -> tuple[int, tuple[int, ...]]:
        """(the union of the blocks of the reservations that begin before `end`, its key)."""
        reservations = self.reservations
        members = tuple([i for i, r in enumerate(reservations) if r[0] < end])
        if members == self._members:
            return self._mask, members
        last = self._members
        joined = set(members).difference(last)
        if len(members) - len(joined) == len(last):  # the last answer is part of this one
            acc = self._mask
        else:
            acc, joined = 0, members
        for i in joined:
            acc |= reservations[i][1]
        self._members, self._mask = members, acc
        return acc, members
