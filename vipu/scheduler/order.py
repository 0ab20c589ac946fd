"""The pending queue kept in a policy's order, incrementally, so a cycle never sorts 10,000 jobs.

Why this works for multifactor priority although ages grow every second: for a job whose age factor is not yet
saturated, priority(now) = static + w_fs * fs(user) + w_age * (now - submit) / max_age, so within one user the
order by static - w_age * submit / max_age never changes; only the per-user constant (fair-share, recomputed
every priority_calc_period) and saturation (age >= max_age) move jobs relative to each other. So each user has two
sorted lists (not yet saturated, saturated) with time-invariant keys, a heap moves jobs to the saturated list when
their age reaches max_age, and a cycle merges the lists lazily by the priority at `now`. Insertion and removal are
a bisect; a cycle that stops early touches only the jobs it looks at. Ties: earlier submit time, then lower id.

A multifactor priority below 1 (a large nice) counts as 1, as Slurm's does, so such jobs wait in submit order behind
every other: its priority/multifactor clamps the computed priority (priority_multifactor.c _get_priority_internal,
"Priority 0 is reserved for held jobs": if (priority < 1) priority = 1) into job_ptr->priority, which its queue
sorts by, and sprio and squeue %Q show (multifactor.py clamps the total shown). The lists' keys stay unclamped, so
the merge, on reaching the first job at or below the floor, takes every job left, all at it, in submit order.

A job an admin gave a fixed priority (scontrol update Priority=N) is in a list of its own whose key is that priority.

The other orders are static keys: submit time (fifo) and time limit (sjf).

Held, not-yet-begun and dependency-blocked jobs are filed in lists of their own (`gated`), so a cycle's walk never
steps over them however many there are, while squeue still lists every pending job in the one order.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from operator import itemgetter
from typing import Iterable, Iterator, Literal

from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.policies.base import QueuedJob, RunningJob
from vipu.scheduler.multifactor import LOWEST, FairShare, qos_factors

OrderKind = Literal["priority", "submit", "shortest"]
Entry = tuple[float, float, int]  # (sort key, submit time, id)
ListKey = tuple[str | None, bool, bool]  # (user, saturated, gated); user is "" for the static orders
FIXED = None  # the user of the list of jobs with a fixed priority (an admin's), whose keys need no shift
MANY = 64  # jobs leaving at once from which remove_many() filters the lists they leave instead of deleting each
FLOOR = -LOWEST  # the key of the lowest priority a job has: lower priorities are taken as it (see above)
SLICED = 16  # a list is cut by slices with at most 1/SLICED of its length in bisects, the rest filtered entry by
# entry (a bisect costs about as much as testing a dozen entries)
_ID = itemgetter(2)  # an Entry's job id


class PendingOrder:
    def __init__(self, kind: OrderKind, config: SchedulerConfig, total_ipus: int, fairshare: FairShare):
        self.kind = kind
        self.config = config
        self.total = total_ipus
        self.fairshare = fairshare
        w = config.weights
        self._w_size, self._w_age, self._w_fs, self._max_age = w.job_size, w.age, w.fairshare, config.max_age
        self._qos_part = {name: w.qos * f for name, f in qos_factors(config).items()}
        self.jobs: dict[int, QueuedJob] = {}
        self._entry: dict[int, tuple[ListKey, Entry]] = {}  # id -> (list key, entry)
        self._lists: dict[ListKey, list[Entry]] = {}  # (user, saturated, gated) -> sorted entries
        self._saturation: list[tuple[float, int]] = []  # heap of (submit + max_age, id)
        self._fs: dict[str, float] = {}
        self._fs_at: float | None = None

    def read_copy(self) -> PendingOrder:
        """A copy for reads (view.py): iterating it may re-file jobs (saturation) and refresh fair-share, which must
        not touch the live order. Pointer copies; the entries are immutable tuples."""
        copy = object.__new__(PendingOrder)
        copy.__dict__.update(self.__dict__)
        copy.fairshare = self.fairshare.read_copy()
        copy.jobs, copy._entry = dict(self.jobs), dict(self._entry)
        copy._lists = {where: list(entries) for where, entries in self._lists.items()}
        copy._saturation, copy._fs = list(self._saturation), dict(self._fs)
        return copy

    def fairshare_factors(self, now: float, running: Iterable[RunningJob]) -> dict[str, float]:
        """The fair-share factors of the last priority calculation (every priority_calc_period, as Slurm's), by
        user, made now if there was none that recent. Why here too: the walk needs none while one user waits, and
        a job then started with factor 1 where `vipu queue` had shown its real one (%Q jumped at its start)."""
        if self._stale(now):
            self._fs, self._fs_at = self.fairshare.factors(now, running), now
        return self._fs

    def _stale(self, now: float) -> bool:
        at = self._fs_at
        return at is None or now - at >= self.config.priority_calc_period or now < at

    def static(self, job: QueuedJob) -> float:
        """The part of the priority that never changes: job size, QOS, nice."""
        return self._w_size * job.ipus / self.total + self._qos_part[job.qos] - job.nice

    def add(self, job: QueuedJob, now: float, gated: bool = False) -> None:
        """File a pending job (again); `gated`: held, not begun or waiting for a dependency: the walk skips it."""
        self.remove(job.id)
        self.jobs[job.id] = job
        if self.kind == "submit":
            where, entry = ("", False, gated), (job.submit_time, job.submit_time, job.id)
        elif self.kind == "shortest":
            where, entry = ("", False, gated), (job.time_limit, job.submit_time, job.id)
        elif job.fixed_priority is not None:  # an admin's priority: a key that never changes, and no shift (iterate)
            where, entry = (FIXED, True, gated), (-float(job.fixed_priority), job.submit_time, job.id)
        else:
            saturated = now - job.submit_time >= self._max_age
            where, entry = (job.user, saturated, gated), self._priority_entry(job, saturated)
            if not saturated:
                heap = self._saturation
                heapq.heappush(heap, (job.submit_time + self._max_age, job.id))
                if len(heap) > 2 * len(self.jobs) + 64:  # drop entries of jobs that left the queue
                    self._saturation = [e for e in heap if e[1] in self.jobs]
                    heapq.heapify(self._saturation)
        insort(self._lists.setdefault(where, []), entry)
        self._entry[job.id] = (where, entry)

    def _priority_entry(self, job: QueuedJob, saturated: bool) -> Entry:
        age_part = 0.0 if saturated else -self._w_age * job.submit_time / self._max_age
        return (-(self.static(job) + age_part), job.submit_time, job.id)

    def remove(self, job_id: int) -> None:
        found = self._entry.pop(job_id, None)
        if found is None:
            return
        where, entry = found
        del self.jobs[job_id]
        entries = self._lists[where]
        del entries[bisect_left(entries, entry)]
        if not entries:
            del self._lists[where]

    def remove_many(self, job_ids: list[int]) -> None:
        """remove() for each; a list that loses many of its entries is filtered once. Why: a cycle on a large Pod
        starts two thousand jobs, and deleting each from a list of 10,000 entries moved the rest of the list."""
        if len(job_ids) < MANY:
            for job_id in job_ids:
                self.remove(job_id)
            return
        leaving: dict[ListKey, list[Entry]] = {}
        for job_id in job_ids:
            found = self._entry.pop(job_id, None)
            if found is not None:
                del self.jobs[job_id]
                entries = leaving.get(found[0])
                if entries is None:
                    leaving[found[0]] = [found[1]]
                else:
                    entries.append(found[1])
        for where, gone in leaving.items():
            entries = self._lists[where]
            # The runs between the entries that leave, copied whole (slice copies, a memcpy), each found by a bisect
            # unless it begins right after the last: the jobs a cycle starts are mostly those it walked, which
            # come in the list's order (sjf's waves start nearly all of the first jobs it walks). Once the
            # bisects would cost more than a test of every entry the list keeps, the rest is filtered so.
            gone.sort()
            kept, start, searches = [], 0, len(entries) // SLICED
            for k, entry in enumerate(gone):
                if entries[start] is not entry:
                    if not searches:
                        ids = {e[2] for e in gone[k:]}
                        kept += [e for e in entries[start:] if e[2] not in ids]
                        start = len(entries)
                        break
                    searches -= 1
                    at = bisect_left(entries, entry, start)
                    kept += entries[start:at]
                    start = at
                start += 1
            kept += entries[start:]
            if kept:
                self._lists[where] = kept
            else:
                del self._lists[where]

    def _saturate(self, now: float) -> None:
        heap = self._saturation
        while heap and heap[0][0] <= now:
            _, job_id = heapq.heappop(heap)
            job = self.jobs.get(job_id)
            if job is not None:
                (_, saturated, gated), _ = self._entry[job_id]
                if not saturated:
                    self.add(job, now, gated)  # re-files it in its user's saturated list

    def iterate(self, now: float, running=(), gated: bool = False) -> Iterator[QueuedJob]:
        """Pending jobs in queue order at `now`, produced lazily; gated ones (held, not begun, dependency-blocked)
        only if `gated`."""
        if self.kind != "priority":
            streams = [entries for where, entries in self._lists.items() if gated or not where[2]]
            if len(streams) == 1:
                # one list: its stored order is the order, read by map() in C. Why not a generator: sjf's walk
                # after a wave reads all of 10,000 jobs, and resumed a Python frame for each
                return map(self.jobs.__getitem__, map(_ID, streams[0]))
        return self._iterate(now, running, gated)

    def _iterate(self, now: float, running, gated: bool) -> Iterator[QueuedJob]:
        jobs, lists = self.jobs, self._lists
        if self.kind == "priority":
            if self._saturation and self._saturation[0][0] <= now:
                self._saturate(now)
            if len(lists) > 1 and self._stale(now) and len({user for user, _, _ in lists}) > 1:
                # Fair-share only reorders jobs of different users, so with one user it is not computed at all.
                self._fs, self._fs_at = self.fairshare.factors(now, running), now
        streams = [(where, entries) for where, entries in lists.items() if gated or not where[2]]
        if self.kind != "priority":  # the static orders: the ready list and the gated list
            shifted = [(entries, 0.0) for _, entries in streams]
            floor = None
        else:
            w_age, w_fs = self._w_age, self._w_fs
            age_now = w_age * now / self._max_age
            shifted = [(entries, 0.0 if user is FIXED else
                        w_fs * self._fs.get(user, 1.0) + (w_age if saturated else age_now))
                       for (user, saturated, _), entries in streams]
            floor = FLOOR
        if len(shifted) == 1:  # one list: its stored order is the order, down to the floor
            entries, shift = shifted[0]
            for i, entry in enumerate(entries):
                if entry[0] - shift >= FLOOR:
                    for job_id in _by_submit([entries[i:]]):
                        yield jobs[job_id]
                    return
                yield jobs[entry[2]]
            return
        for job_id in _merge(shifted, floor):
            yield jobs[job_id]


def _merge(streams: list[tuple[list[Entry], float]], floor: float | None = None) -> Iterator[int]:
    """Ids of sorted entry lists merged by (key - the list's shift, submit time, id), as heapq.merge would order
    them, without a generator per list; from the first at or above `floor` (if given), the rest by submit time and
    id, as if each key were the floor."""
    heap = []
    for k, (entries, shift) in enumerate(streams):
        if entries:
            key, submit, job_id = entries[0]
            heap.append((key - shift, submit, job_id, k, 0))
    heapq.heapify(heap)
    while heap:
        key, _, job_id, k, i = heap[0]
        if floor is not None and key >= floor:  # every entry left is at the floor: the lists' order no longer holds
            yield from _by_submit([streams[k][0][i:] for _, _, _, k, i in heap])
            return
        yield job_id
        entries, shift = streams[k]
        i += 1
        if i < len(entries):
            key, submit, next_id = entries[i]
            heapq.heapreplace(heap, (key - shift, submit, next_id, k, i))
        else:
            heapq.heappop(heap)


def _by_submit(parts: list[list[Entry]]) -> Iterator[int]:
    """Ids of the entries of `parts` by submit time, then id: the order of jobs of equal priority."""
    rest = [entry for part in parts for entry in part]
    rest.sort(key=lambda entry: (entry[1], entry[2]))
    for entry in rest:
        yield entry[2]
