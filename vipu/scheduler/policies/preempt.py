"""Deciding which running jobs a preempting job evicts (the doing is the Scheduler's).

Why search by aligned block rather than by freed IPU count: freeing enough IPUs in the wrong places still leaves no
block for the job (Kueue #5243). We look at every aligned block of the job's size that free IPUs plus evictable
jobs' IPUs could fill, and take the one that evicts the lowest-QOS, fewest jobs losing the least work; blocks are
buddies, so a victim either holds the whole block or lies wholly inside it, and the search costs a few
operations per evictable job.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Container, Mapping, NamedTuple, Sequence

from vipu.scheduler.policies.base import QueuedJob, RunningJob
from vipu.scheduler.policies.reservations import blocks_mask


def choose_victims(
    job: QueuedJob,
    candidates: Sequence[RunningJob],
    free: int,
    usable: int,
    total: int,
    now: float,
    qos_priority: Mapping[str, int],
    evictable: int | None = None,
) -> tuple[int, list[RunningJob]] | None:
    """(first_ipu, victims sorted by id) for `job`, or None if evicting cannot make room.

    `free`: IPUs free now that the job may take; `usable`: IPUs it may take at all once evicted (its allocation,
    healthy, outside reservations of higher-priority jobs); `evictable`: the candidates' IPUs, if the caller keeps
    them."""
    if not candidates:
        return None
    if evictable is None:
        evictable = blocks_mask([n for r in candidates for n in (r.first_ipu, r.ipus)], total)
    room = room_of(free, evictable, usable, total)
    return Victims(candidates, job.ipus, total, now, qos_priority, set()).choose(room)


def room_of(free: int, evictable: int, usable: int, total: int) -> bytes:
    """What a preempting job may take, free or by evicting, as the little-endian bytes Victims.choose reads."""
    return ((free | evictable) & usable).to_bytes((total + 7) >> 3, "little")


class Victims:
    """The candidates of one QOS for jobs of one size, sorted by what evicting them costs, kept through a walk.

    Why by victim, not by IPU: on 65,536 IPUs a walk over every IPU and every free block cost 0.1 s a call.
    Victims are aligned blocks, so a block of the job's size either lies inside one victim (that victim alone is
    evicted) or holds whole victims; each candidate block is checked against the bytes of what may be taken.
    Why sorted once: looking at every candidate cost about a millisecond a call on 65,536 IPUs, and sjf's walk
    evicted for two hundred jobs in one cycle. Looked at in the order of their keys, the first candidate whose
    block is whole in the room is the one a look at all of them picks (keys differ at least by the block's first
    IPU, and the blocks of different victims never overlap). Evicted candidates (`gone`, the walk's set) are
    skipped; a block whose smaller victims lose some is dropped (evicted() says why).

    Why a walk names what it may use (`usable`, to choose()): what a preempting job may take, free or by evicting,
    only shrinks during a walk (an eviction hands IPUs from the evictable to the free, and the evicting job takes its
    block), so a candidate that is not whole in it for the same usable IPUs never will be: each usable key keeps
    where the candidates not yet ruled out begin, and a walk that evicts for hundreds of jobs no longer looks at the
    same thousand candidates each time."""

    __slots__ = ("size", "_gone", "_singles", "_head", "_groups", "_current", "_from")

    def __init__(self, candidates: Sequence[RunningJob], size: int, total: int, now: float,
                 qos_priority: Mapping[str, int], gone: Container[int]):
        self._build(rank(candidates, now, qos_priority), size, total, gone)

    @classmethod
    def from_ranked(cls, ranked: Ranked, size: int, total: int, gone: Container[int]) -> Victims:
        """As Victims(candidates, size, total, now, qos_priority, gone), from rank(candidates, now, qos_priority)
        (those in `gone` are left out)."""
        self = cls.__new__(cls)
        self._build(ranked, size, total, gone)
        return self

    def _build(self, ranked: Ranked, size: int, total: int, gone: Container[int]) -> None:
        self.size, self._gone = size, gone
        # (by_cost: already in the order of their keys)
        # (a RunningJob's fields by index: its named getters cost twice as much, in loops over thousands of jobs)
        self._singles = [e for e in ranked.by_cost if e[3][_IPUS] >= size and e[3][_ID_AT] not in gone]
        self._head = 0
        # The blocks that hold smaller candidates whole, with their keys, in one pass over the candidates by id: the
        # members come in id order and their work is summed in it (the same sum, to the last bit, as a sort of each
        # block's members would give), without a sort and a call per block (a walk builds thousands per size).
        blocks: dict[int, list] = {}  # first IPU -> [highest priority, work lost, members by id]
        for priority, work, first, r in ranked.by_id:
            if r[_IPUS] >= size or r[_ID_AT] in gone:
                continue
            first -= first % size
            held = blocks.get(first)
            if held is None:
                blocks[first] = [priority, work, [r]]
            else:
                if priority > held[0]:
                    held[0] = priority
                held[1] += work
                held[2].append(r)
        self._current: dict[int, list[RunningJob]] = {}  # block -> the candidates it holds whole, by id
        groups = []
        for first, (top, work, held) in blocks.items():
            if first + size <= total:
                self._current[first] = held
                groups.append(((top, len(held), work, first), held))
        groups.sort(key=_KEY)
        self._groups = groups
        self._from: dict[object, list[int]] = {}  # usable key -> [first single, first group] not yet ruled out

    def choose(self, room: bytes, usable: object = None) -> tuple[int, list[RunningJob]] | None:
        """(first_ipu, victims sorted by id) of the cheapest block wholly in `room` (room_of()), or None. `usable`:
        a key that stands for the IPUs the job may use (see above); None: look at every candidate."""
        size, gone, singles = self.size, self._gone, self._singles
        head = self._head
        while head < len(singles) and singles[head][3].id in gone:  # the cheapest go first: skipped once
            head += 1
        self._head = head
        start = None
        if usable is not None:
            start = self._from.get(usable)
            if start is None:
                start = self._from[usable] = [head, 0]
            elif start[0] < head:
                start[0] = head
        best_key, best = None, None
        for k in range(head if start is None else start[0], len(singles)):
            priority, work, _, r = singles[k]
            if r.id in gone:
                continue
            for first in range(r.first_ipu, r.first_ipu + r.ipus, size):
                if _whole(room, first, size):
                    best_key, best = (priority, 1, work, first), (first, [r])
                    break  # (the lowest of its blocks: the others only differ by a later first IPU)
            if best is not None:
                if start is not None:
                    start[0] = k  # (those before it are gone or never whole)
                break
        else:
            if start is not None:
                start[0] = len(singles)
        current, groups = self._current, self._groups
        g = 0 if start is None else start[1]
        while g < len(groups):
            key, chosen = groups[g]
            if best_key is not None and key > best_key:
                break
            first = key[3]
            if current.get(first) is chosen and _whole(room, first, size):
                return first, chosen
            g += 1
            if start is not None:
                start[1] = g  # (every group before it was dropped or is not whole)
        return best

    def evicted(self, victims: Sequence[RunningJob]) -> None:
        """Drop the blocks that held some of `victims` (already in `gone`), evicted for a job that takes its block.
        Why not file them again under what is left in them: such a block holds IPUs of that job's block (it holds
        a victim, and that block holds the victim or lies in it), which leave what may be taken for the rest of the
        walk, so it is never whole again; filing again the blocks of two hundred evictions in each index of a walk
        took 8 ms of the 115 ms cycle after a wave on 65,536 IPUs."""
        size, current = self.size, self._current
        for v in victims:
            if v.ipus < size:  # (a single is skipped in choose())
                current.pop(v.first_ipu - v.first_ipu % size, None)


class Ranked(NamedTuple):
    """A QOS's candidates as (priority, work lost, first IPU, job), in two orders. Why apart from Victims: both are
    the same for every size, and a walk that evicts builds a Victims for each size of a QOS; sorting thousands of
    candidates once per QOS, not once per size, cost a tenth of such a walk on 65,536 IPUs."""

    by_cost: list[tuple]  # sorted: a single's key but for the first whole block inside it (first IPUs differ)
    by_id: list[tuple]  # by job id: the order of a block's members, and of the sum of their work


def rank(candidates: Sequence[RunningJob], now: float, qos_priority: Mapping[str, int]) -> Ranked:
    get = qos_priority.get
    out = []
    for r in candidates:
        elapsed = now - r.start_time
        out.append((get(r.qos, 0), r.ipus * (elapsed if elapsed > 0.0 else 0.0), r.first_ipu, r))
    return Ranked(sorted(out), sorted(out, key=_ENTRY_ID))


_ID_AT, _IPUS = RunningJob._fields.index("id"), RunningJob._fields.index("ipus")


_KEY = itemgetter(0)  # a group's key


def _ENTRY_ID(entry: tuple) -> int:
    return entry[3].id


def _whole(room: bytes, first: int, size: int) -> bool:
    """Is the block wholly in `room` (a mask as little-endian bytes)? Blocks of 8 or more are whole bytes."""
    if size >= 8:
        return room[first >> 3:(first + size) >> 3] == b"\xff" * (size >> 3)
    bits = (1 << size) - 1
    return (room[first >> 3] >> (first & 7)) & bits == bits
