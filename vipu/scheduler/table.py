"""The scheduler's memory: every job record plus the indexes a cycle needs, kept in step by one `put`.

Why one entry point: each change arrives as a new Job record (already committed to the Journal); `put` moves it
between the pending, running and lookup indexes by comparing it with the record it replaces, so no code path can
leave an index stale.

Why held, dependency-blocked, not-yet-begun and cleaning jobs (requeued while their last run is still torn down)
are kept apart (`gated`): a queue may hold ten thousand of them, and a cycle must not cost more because of jobs
that may not run. A gated job leaves that set when it is released, when its dependency is met, when its begin time
comes, or when its cleanup ends (whichever is last: gate_openings.py); a dependency is evaluated again only
when something it reads changed (`recheck`: a job it names, or a job of its name for singleton, changed state), not
on every cycle, and begin times wait in a heap whose head is all a cycle looks at (`begun`).

A job with a begin time is queued as if submitted then (Slurm's EligibleTime): its QueuedJob's submit_time is the
later of the two, so its age factor and its place in fifo order count from when it could first run.
"""

from __future__ import annotations

import heapq
from collections import Counter
from operator import itemgetter
from typing import TYPE_CHECKING, Iterable, Iterator

from vipu.errors import NotFound
from vipu.scheduler.claims import Claim
from vipu.scheduler.dependency_reads import watched
from vipu.scheduler.gate_openings import GateOpenings, Teardown
from vipu.scheduler.job_record import Job
from vipu.scheduler.policies.base import PendingInfo, QueuedJob, RunningJob, new_record
from vipu.scheduler.policies.reservations import blocks_mask
from vipu.scheduler.job_spec import parse_array
from vipu.scheduler.job_states import ACTIVE, TERMINAL, JobState

if TYPE_CHECKING:
    from vipu.scheduler.node_requests import NodeNames

S = JobState
PENDING, RUNNING, COMPLETING = S.PENDING, S.RUNNING, S.COMPLETING
_SIZE_LIMIT = itemgetter(1, 2)  # a QueuedJob's (ipus, time_limit)
_SIZE_QOS = itemgetter(1, 5)  # its (ipus, qos)


class JobTable(GateOpenings):
    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.pending: dict[int, QueuedJob] = {}  # every PENDING job
        self.gated: set[int] = set()  # pending jobs kept out of the walk: held, not begun, dependency not met, cleaning
        # jobs whose last run is still being torn down (Slurm's completing jobs; a requeued one waits, Cleaning)
        self.cleaning: dict[int, Teardown] = {}
        self.cleaning_mask = 0  # the IPUs those runs still hold
        self.claims: dict[int, Claim] = {}  # preemptors waiting for their victims' teardown (claims.py)
        self.claimed_mask = 0  # the IPUs the claims hold
        self.not_begun: set[int] = set()  # pending jobs whose begin time had not come when last seen (BeginTime)
        self.begins: list[tuple[float, int]] = []  # heap of (begin time, id) of not_begun (stale entries skipped)
        self.gate_info: dict[int, PendingInfo] = {}  # gated jobs' last dependency verdict (Dependency, ...Never...)
        self.recheck: set[int] = set()  # gated jobs whose dependency the next cycle must evaluate (again)
        self.dependency_times: list[tuple[float, int]] = []  # heap of (when, id): waits time alone ends (after+M)
        self.deps_met: set[int] = set()  # pending jobs whose dependency was satisfied (Slurm then drops it)
        self.waiting_on: dict[int, set[int]] = {}  # job or array id named in a dependency -> gated jobs naming it
        self.singletons: dict[tuple[str, str], set[int]] = {}  # (name, user) -> gated jobs with a singleton clause
        self.running: dict[int, RunningJob] = {}  # RUNNING and COMPLETING: they hold a partition
        self.used_mask = 0
        self.ending: dict[float, dict[int, tuple[int, int]]] = {}  # end_by -> running id -> (first IPU, IPUs)
        self._releases: dict[float, tuple[list[int], int]] = {}  # release_groups() answers, dropped on change
        self.arrays: dict[int, list[int]] = {}  # array_job_id -> task job ids
        self.active_by_name: dict[tuple[str, str], set[int]] = {}  # (name, user) -> active ids, for singleton
        self.active_by_owner: Counter = Counter()  # ("user", name) and ("account", name) -> active jobs (MaxSubmit)
        self.request_ids: dict[tuple[str, str], list[int]] = {}  # (user, request id): each user's own keys
        self.pending_sizes: Counter = Counter()  # PENDING jobs by IPUs
        self.pending_limits: dict[int, Counter] = {}  # IPUs -> time limits of PENDING jobs -> how many
        self._shortest: dict[int, float] = {}  # IPUs -> the shortest of those limits
        self.ready_sizes: Counter = Counter()  # PENDING jobs that are not gated, by IPUs
        self.ready_qos: Counter = Counter()  # PENDING jobs that are not gated, by (QOS, IPUs)
        self.ready_by_qos: Counter = Counter()  # PENDING jobs that are not gated, by QOS
        self.ready_seq: dict[int, int] = {}  # not gated -> when it became so (a counter; see reasons.pending_reason)
        self.seq = 0
        self.next_id = 1
        self.quarantined: dict[int, str] = {}  # ids of jobs a repairing start lost or moved aside -> what to say
        self.ended: list[tuple[float, int]] = []  # heap of (end time, id) of ended jobs, for purge.py (stale kept)
        self.ended_named: list[tuple[float, int]] = []  # of those, due to go but named by a waiting dependency

    nodes: NodeNames | None = None  # the Pod's node names, for jobs with a nodelist or exclude (the scheduler's)
    # During put_each() (None outside it): (first IPU, IPUs, ...) of the runs that joined, not in used_mask yet,
    # and of those that left, still in it; the jobs that left the queue, not yet counted out of its counters, and
    # those of them that were ready
    _joining: list[int] = None  # type: ignore[assignment]
    _parting: list[int] = None  # type: ignore[assignment]
    _dequeued: list[QueuedJob] = None  # type: ignore[assignment]
    _unreadied: list[QueuedJob] = None  # type: ignore[assignment]

    def put_each(self, jobs: Iterable[Job], now: float) -> Iterator[Job]:
        """put() each job, yielding it once put. The runs that leave and those that enter change used_mask together,
        at the end (_settle), and the jobs that leave the queue are counted out of its counters together, by size,
        time limit and QOS (_count_out). Why: a cycle on a large Pod starts two thousand jobs and may evict hundreds;
        each block OR-ed into (or cleared from) a mask of 65,536 IPUs copied 8 KB, and the six counters of each
        start cost a tenth of its commit."""
        self._joining, self._parting, self._dequeued, self._unreadied = [], [], [], []
        try:
            for job in jobs:
                self._put(job, now)
                yield job
        finally:
            self._settle()
            self._count_out(self._dequeued, self._unreadied)
            self._joining = self._parting = self._dequeued = self._unreadied = None  # type: ignore[assignment]

    def _settle(self) -> None:
        """used_mask without the runs that left, then with those that joined (a run that joins after one left may
        take its IPUs; one that leaves after one joined settles the joins first)."""
        for blocks, joined in ((self._parting, False), (self._joining, True)):
            if blocks:
                mask = blocks_mask(blocks, max(blocks[k] + blocks[k + 1] for k in range(0, len(blocks), 2)))
                self.used_mask = self.used_mask | mask if joined else self.used_mask & ~mask
                blocks.clear()

    def put(self, job: Job, now: float) -> None:
        """Index the new record of a job; `now` decides whether its begin time has come."""
        for _ in self.put_each((job,), now):
            pass

    def _put(self, job: Job, now: float) -> None:
        job_id, state = job.id, job.state
        old = self.jobs.get(job_id)
        renamed = False
        if old is not None:
            renamed = old.name != job.name  # scontrol update Name=: it leaves its old name's singleton group
            self._leave(old, state in ACTIVE and not renamed)
            if old.spec is not job.spec and old.spec.dependency != job.spec.dependency:  # evaluated afresh
                self.deps_met.discard(job_id)
        else:
            if job.array_job_id is not None:
                self.arrays.setdefault(job.array_job_id, []).append(job_id)
            if job.request_id is not None:
                self.request_ids.setdefault((job.user, job.request_id), []).append(job_id)
            if job_id >= self.next_id:
                self.next_id = job_id + 1
        self.jobs[job_id] = job
        self._enter(job, old is None or old.state not in ACTIVE or renamed, now)
        if state in TERMINAL and job.end_time is not None and (old is None or old.end_time != job.end_time):
            heapq.heappush(self.ended, (job.end_time, job_id))
        if old is not None and old.state is not state and self.waiting_on:
            self._changed(job_id, job.array_job_id)

    def _enter(self, job: Job, newly_active: bool, now: float) -> None:
        state = job.state
        if state is PENDING:
            spec = job.spec
            ipus, limit = spec.ipus, spec.time_limit
            begin = job.begin_time
            queued = self.pending[job.id] = QueuedJob(
                job.id, ipus, limit, job.submit_time if begin is None or begin <= job.submit_time else begin,
                job.user, spec.qos, spec.nice,  # type: ignore[arg-type]
                job.array_job_id, parse_array(spec.array).limit if spec.array else None, spec.allocation,
                job.fixed_priority, spec.account,
                self.nodes.mask(spec) if (spec.nodelist or spec.exclude) and self.nodes else None,
            )
            self.pending_sizes[ipus] += 1
            limits = self.pending_limits.get(ipus)
            if limits is None:
                limits = self.pending_limits[ipus] = Counter()
            limits[limit] += 1
            shortest = self._shortest.get(ipus)
            if shortest is None or limit < shortest:  # type: ignore[operator]
                self._shortest[ipus] = limit  # type: ignore[assignment]
            waits = spec.dependency is not None and job.id not in self.deps_met
            if waits:
                self._watch(job, True)
                self.recheck.add(job.id)
            early = begin is not None and begin > now
            if early:  # not eligible yet: gated until its begin time (begun)
                self.not_begun.add(job.id)
                begins = self.begins
                heapq.heappush(begins, (begin, job.id))  # type: ignore[arg-type]
                if len(begins) > 2 * len(self.not_begun) + 64:  # drop entries of jobs that left or were re-filed
                    self.begins = [(self.jobs[i].begin_time, i) for i in self.not_begun]  # type: ignore[misc]
                    heapq.heapify(self.begins)
            if job.held or waits or early or job.id in self.cleaning or job.id in self.claims:
                self.gated.add(job.id)
            else:
                self._ready(queued)
        elif state is RUNNING or state is COMPLETING:
            spec = job.spec
            first, ipus, started = job.first_ipu, spec.ipus, job.start_time
            end_by = started + spec.time_limit  # type: ignore[operator]
            self.running[job.id] = new_record(RunningJob, (
                job.id, ipus, first, started, end_by, job.user, spec.qos, job.array_job_id, spec.account,
            ))
            self._joining += (first, ipus)  # type: ignore[operator]
            group = self.ending.get(end_by)
            if group is None:  # (not setdefault: it makes a dict at every call)
                group = self.ending[end_by] = {}
            group[job.id] = (first, ipus)  # type: ignore[assignment]
            self._releases.pop(end_by, None)
        if newly_active and state in ACTIVE:
            for owner in owners(job):
                self.active_by_owner[owner] += 1
            key = (job.name, job.user)
            active = self.active_by_name.get(key)
            if active is None:
                self.active_by_name[key] = {job.id}
            else:
                active.add(job.id)
            if self.singletons:
                self._changed_name(key)

    def _leave(self, job: Job, stays_active: bool) -> None:
        queued = self.pending.pop(job.id, None)
        if queued is not None:
            self._dequeued.append(queued)  # counted out at the end of put_each (_count_out)
            if job.id in self.gated:
                self.gated.discard(job.id)
                self.not_begun.discard(job.id)
                self.recheck.discard(job.id)
                self.gate_info.pop(job.id, None)
                if job.spec.dependency is not None and job.id not in self.deps_met:
                    self._watch(job, False)
            else:
                del self.ready_seq[job.id]
                self._unreadied.append(queued)
        else:
            running = self.running.pop(job.id, None)
            if running is not None:
                if self._joining:  # (runs that joined before it, first: their IPUs may be the ones it leaves)
                    self._settle()
                self._parting += (running.first_ipu, running.ipus)
                group = self.ending[running.end_by]
                del group[job.id]
                if not group:
                    del self.ending[running.end_by]
                self._releases.pop(running.end_by, None)
        if not stays_active and job.state in ACTIVE:
            for owner in owners(job):
                self.active_by_owner[owner] -= 1
            key = (job.name, job.user)
            active = self.active_by_name.get(key)
            if active is not None:
                active.discard(job.id)
                if not active:
                    del self.active_by_name[key]
            if self.singletons:
                self._changed_name(key)

    # -- readiness ------------------------------------------------------------------------------------------------
    def _ready(self, queued: QueuedJob) -> None:
        self.ready_sizes[queued.ipus] += 1
        self.ready_qos[queued.qos, queued.ipus] += 1
        self.ready_by_qos[queued.qos] += 1
        self.seq += 1
        self.ready_seq[queued.id] = self.seq

    def _unready(self, queued: QueuedJob) -> None:
        self._count_unready(queued.ipus, queued.qos, 1)
        del self.ready_seq[queued.id]

    def _count_unready(self, ipus: int, qos: str, n: int) -> None:
        self.ready_sizes[ipus] -= n
        self.ready_qos[qos, ipus] -= n
        self.ready_by_qos[qos] -= n

    def _count_out(self, dequeued: list[QueuedJob], unreadied: list[QueuedJob]) -> None:
        """Take jobs that left the queue out of the pending counters (`unreadied`: those of them that were ready,
        out of the ready counters too), n at a time for each distinct size and time limit (or size and QOS)."""
        if not dequeued:
            return
        for (ipus, limit), n in Counter(map(_SIZE_LIMIT, dequeued)).items():
            self.pending_sizes[ipus] -= n
            limits = self.pending_limits[ipus]
            left = limits[limit] - n
            if left:
                limits[limit] = left
            else:
                del limits[limit]
                if self._shortest[ipus] == limit:
                    if limits:
                        self._shortest[ipus] = min(limits)
                    else:
                        del self._shortest[ipus]
        for (ipus, qos), n in Counter(map(_SIZE_QOS, unreadied)).items():
            self._count_unready(ipus, qos, n)

    def _watch(self, job: Job, on: bool) -> None:
        """Register (or forget) a gated job under everything its dependency reads."""
        dep = job.spec.parsed_dependency()
        assert dep is not None
        keys: list[tuple[dict, object]] = [(self.waiting_on, i) for i in watched(self.jobs, job, dep)]
        if any(c.kind == "singleton" for c in dep.clauses):
            keys.append((self.singletons, (job.name, job.user)))
        for index, key in keys:
            if on:
                index.setdefault(key, set()).add(job.id)
            else:
                ids = index.get(key)
                if ids is not None:
                    ids.discard(job.id)
                    if not ids:
                        del index[key]

    def _changed(self, job_id: int, array_job_id: int | None) -> None:
        """A job changed state: dependencies naming it (or its array) must be evaluated again."""
        for key in (job_id, array_job_id):
            waiting = self.waiting_on.get(key)  # type: ignore[arg-type]
            if waiting:
                self.recheck |= waiting

    def _changed_name(self, key: tuple[str, str]) -> None:
        waiting = self.singletons.get(key)
        if waiting:
            self.recheck |= waiting

    def forget(self, job: Job) -> None:
        """An ended job leaves memory (purge.py): its id stays taken, and lookups say where it went."""
        del self.jobs[job.id]
        if job.array_job_id is not None:
            tasks = self.arrays.get(job.array_job_id)
            if tasks is not None:
                tasks.remove(job.id)
                if not tasks:
                    del self.arrays[job.array_job_id]
        if job.request_id is not None:
            key = (job.user, job.request_id)
            ids = self.request_ids.get(key)
            if ids is not None and job.id in ids:
                ids.remove(job.id)
                if not ids:
                    del self.request_ids[key]

    # -- lookups ----------------------------------------------------------------------------------------------
    def get(self, job_id: int) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            if job_id in self.quarantined:
                raise NotFound(self.quarantined[job_id], resource=("job", str(job_id)))
            if 0 < job_id < self.next_id:  # ids are never reused: this one ended and was purged (purge.py)
                raise NotFound(f"job {job_id} has ended and left the queue (min_job_age); `vipu history -j {job_id}`"
                               " shows it", resource=("job", str(job_id)))
            raise NotFound(f"job {job_id} does not exist; `vipu queue` lists active jobs and `vipu history` all jobs",
                           resource=("job", str(job_id)))
        return job

    def whole_array(self, job_id: int, single: bool) -> bool:
        """Whether an id stands for every task of an array: an array job's id does (scancel 26), unless `single`
        says it names just that job, the array's first task (scancel 26_0 of an array 0-99)."""
        return not single and job_id in self.arrays

    def expand(self, job_ids: Iterable[int], single: bool = False) -> list[Job]:
        """Job ids, where an array job id stands for all of its tasks (as scancel does) unless `single`."""
        out: dict[int, Job] = {}
        for job_id in job_ids:
            for i in self.arrays[job_id] if self.whole_array(job_id, single) else [job_id]:
                out[i] = self.get(i)
        return list(out.values())

    def running_since(self, job_id: int, started: float) -> Job | None:
        """The job if it is still in the run that began at `started` (a timer or thread set for an earlier run of a
        requeued job must not end this one), else None."""
        job = self.jobs.get(job_id)
        return job if job is not None and job.state is S.RUNNING and job.start_time == started else None

    def release_groups(self, total: int) -> dict[float, tuple[list[int], int]]:
        """end_by -> the blocks of the running jobs that end by then (first IPU, IPUs, first IPU, ...) and their mask
        on a Pod of `total` IPUs: what the backfill timeline is built from. Why kept: on 65,536 IPUs 5,000 jobs run
        and a cycle ends a few; building the groups and masks afresh each cycle cost a tenth of it."""
        cached, ending = self._releases, self.ending
        if len(cached) != len(ending):
            for end_by, group in ending.items():
                if end_by not in cached:
                    blocks = [n for pair in group.values() for n in pair]
                    cached[end_by] = (blocks, blocks_mask(blocks, total))
        return cached

    @property
    def held_mask(self) -> int:
        """The IPUs the scheduler's jobs hold: running, still torn down, or claimed for a preemptor."""
        return self.used_mask | self.cleaning_mask | self.claimed_mask

    def shortest_limits(self) -> dict[int, float]:
        """IPUs -> the shortest time limit among PENDING jobs of that size (do not change the dict returned)."""
        return self._shortest

    def read_copy(self) -> JobTable:
        """A table for reads, taken under the caller's lock: copies of the indexes reads use, in O(jobs) pointer
        copies (records are immutable, so they are shared). Writes to the original never show in it."""
        copy = JobTable.__new__(JobTable)
        copy.jobs, copy.pending, copy.running = dict(self.jobs), dict(self.pending), dict(self.running)
        copy.arrays = dict(self.arrays)  # an array's task list is complete once its submit returns
        copy.not_begun, copy.gate_info, copy.ready_seq = set(self.not_begun), dict(self.gate_info), dict(self.ready_seq)
        copy.cleaning, copy.claims, copy.claimed_mask = dict(self.cleaning), dict(self.claims), self.claimed_mask
        copy.cleaning_mask = self.cleaning_mask
        copy.ready_sizes, copy.used_mask, copy.seq, copy.next_id = Counter(self.ready_sizes), self.used_mask, self.seq, \
            self.next_id
        copy.quarantined, copy.nodes = self.quarantined, self.nodes  # set once, at start
        return copy


def owners(job: Job) -> list[tuple[str, str]]:
    """Whose queue limits a job counts against (max_submit_jobs_per_user and _per_account)."""
    return [("user", job.user)] + ([("account", job.spec.account)] if job.spec.account else [])
