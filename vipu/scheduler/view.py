"""The queue at one moment, for reads: squeue, sacct, sprio, sinfo and the startable count run on it, not on the
live Scheduler.

Why a copy: a listing of 20,000 jobs takes a quarter of a second to order, explain and convert, and the live queue
must keep taking submissions meanwhile. `Scheduler.view()` copies the indexes reads need under the caller's lock
(pointer copies: a few milliseconds for 20,000 jobs; job records are immutable and shared), and everything else
happens on the copy, outside the lock. The copy has the attributes reasons.py reads, with the same names as the
Scheduler's, so one code says why a job waits in both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from vipu.errors import FailedPrecondition
from vipu.partition.placement import largest_free_block
from vipu.scheduler.expected_start import Expectation, expected_start
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.multifactor import PriorityRows, breakdown, qos_factors
from vipu.scheduler.reasons import Row, completing, decorate, is_completing, pending_reason, row
from vipu.scheduler.startable import startable

S = JobState


@dataclass(frozen=True)
class Pod64Info:
    """One IPU-Link domain (a Pod64) of the Pod, as `vipu info` shows it."""

    ild: int
    first_ipu: int
    ipus: int
    idle: int
    allocated: int
    failed: int
    largest_free_block: int
    drained: int = 0  # healthy, on machines whose agent is drained or missing, in no partition
    draining: int = 0  # the same, but a partition holds them: in use until its job ends, then drained
    completing: int = 0  # a partition holds them whose run is still torn down (ipu_status.completing_mask)



if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


class _ActiveByName:
    """(name, user) -> active job ids, as the live table keeps them for singleton, built from the copy's jobs on the
    first read: only a listing that shows a singleton dependency pays for it, and never under the lock. Readers
    sharing the view may each build it once; the index is assigned whole."""

    def __init__(self, jobs: dict[int, Job]):
        self._jobs = jobs
        self._index: dict[tuple[str, str], set[int]] | None = None

    def get(self, key: tuple[str, str], default=None):
        index = self._index
        if index is None:
            index = {}
            for job in self._jobs.values():
                if job.state not in TERMINAL:
                    index.setdefault((job.name, job.user), set()).add(job.id)
            self._index = index
        return index.get(key, default)


class QueueView:
    def __init__(self, s: Scheduler):
        """Taken under the lock that serialises the Scheduler's writers."""
        self.pod, self.config, self.total, self.full_mask = s.pod, s.config, s.total, s.full_mask
        self.failed_mask = s.failed_mask
        self.retired_qos = s.retired_qos
        self.table = s.table.read_copy()
        self.table.deps_met = set(s.table.deps_met)  # what a shown dependency reads (dependency_reads.py)
        self.table.active_by_name = _ActiveByName(self.table.jobs)
        self.order = s.order.read_copy()
        self.fairshare = self.order.fairshare  # the copy the order shares, as the Scheduler's does
        self.pending_info = s.pending_info  # each cycle makes a new one: never changed once made
        self.last_decision = s.last_decision
        self.last_cycle_seq, self.last_cycle_at = s.last_cycle_seq, s.last_cycle_at

    @property
    def free_mask(self) -> int:
        return self.full_mask & ~self.failed_mask & ~self.table.held_mask

    def jobs_by_state(self) -> Counter[JobState]:
        """Jobs by the state squeue shows: one still torn down counts COMPLETING, not the end it recorded (the
        dashboards' COMPLETING series read 0 while `vipu queue` showed CG)."""
        counts = Counter(job.state for job in self.table.jobs.values())
        for job in self._completing():
            counts[job.state] -= 1
            counts[JobState.COMPLETING] += 1
        return +counts

    def job(self, job_id: int, now: float | None = None) -> Job:
        """One job as `vipu show job` shows it: with its reason, estimated start and (given now) priority."""
        job = decorate(self, completing(self.table, self.table.get(job_id)), now)
        if now is not None and job.state is JobState.PENDING:
            job = job.updated({"priority": self.priority(job_id, now)})
        return job

    def queue(self, keep: Callable[[Job], bool] | None = None, now: float | None = None) -> Iterator[Job]:
        """squeue, lazily: running and completing jobs by start time, then pending jobs in the last cycle's priority
        order (held ones last: their priority is 0); with
        `keep`, only the jobs it keeps (filtered before their reasons and estimates are worked out); given `now`,
        pending jobs carry their priority then (squeue -o %Q)."""
        return (r.decorated() for r in self.queue_rows(keep, now))

    def queue_rows(self, keep: Callable[[Job], bool] | None = None, now: float | None = None,
                   shown_at: float | None = None) -> Iterator[Row]:
        """The same listing as rows (reasons.Row), lazily: a listing kept for paging holds rows, and a page
        decorates only its own. `shown_at`, without `now`: the moment it is for (reasons.pending_reason)."""
        s, jobs = self, self.table.jobs
        running = sorted(chain((jobs[i] for i in s.table.running), self.completing()),
                         key=lambda j: (j.start_time or 0, j.id))
        at = s.last_cycle_at if s.last_cycle_at is not None else max((j.submit_time for j in jobs.values()),
                                                                     default=0.0)
        pending = _held_last(jobs[q.id] for q in s.order.iterate(at, s.table.running.values(), gated=True))
        factors = None if now is None else (s.fairshare.factors(now, s.table.running.values()), qos_factors(s.config))
        shown_at = now if now is not None else shown_at
        return (row(s, j, factors, shown_at) for j in chain(running, pending) if keep is None or keep(j))

    def completing(self) -> list[Job]:
        """The jobs whose run ended but is still torn down, each shown COMPLETING (reasons.completing); a requeued
        one is pending (reason Cleaning)."""
        return [completing(self.table, job) for job in self._completing()]

    def _completing(self) -> Iterator[Job]:
        """The records (their recorded end) of the jobs still torn down that show COMPLETING."""
        jobs = self.table.jobs
        return (jobs[i] for i in self.table.cleaning if i in jobs and is_completing(self.table, jobs[i]))

    def history(self, keep: Callable[[Job], bool] | None = None, states: Iterable[JobState] | None = None,
                duplicates: bool = False, limit: int = 0) -> list[Job]:
        """sacct: every job the scheduler remembers (kept by `keep`) once, as it is now, if its state is one of
        `states` (None: any). `duplicates` (sacct --duplicates): also each earlier run that ended in one of
        `states` (a job preempted, lost or requeued by hand went back to the queue after it), as the job was then.
        Rows by job id, as sacct lists them, a job's runs in the order they ended; `limit` > 0 keeps the `limit`
        most recently ended (a row not ended: when it entered its state)."""
        rows = history_rows(self.table.jobs.values(), keep, states, duplicates)
        return [decorate(self, job) for _, _, job in by_job_id(rows, limit)]

    def priority(self, job_id: int, now: float) -> PriorityBreakdown:
        """sprio for one pending job."""
        queued = self.table.pending.get(job_id)
        if queued is None:
            job = self.table.get(job_id)
            raise FailedPrecondition(f"job {job.display_id} is {job.state.value}; only pending jobs have a priority")
        factors = self.fairshare.factors(now, self.table.running.values())
        return breakdown(queued, now, self.config, self.total, factors)

    def priorities(self, now: float, user: str | None = None, ids: Iterable[int] | None = None,
                   single: bool = False) -> list[PriorityBreakdown]:
        """sprio: every pending job's factors, highest priority first, held ones left out; with `ids` only those (an
        array job id stands for its pending tasks unless `single`, as in sprio -j), refusing one that does not exist
        or is not pending, or is held."""
        table = self.table
        wanted: set[int] | None = None
        if ids is not None:
            wanted = set()
            for i in ids:
                pending = [j.id for j in table.expand([i], single) if j.id in table.pending and not j.held]
                if not pending:
                    job = table.get(i)
                    if job.state is S.PENDING and job.held:
                        raise FailedPrecondition(f"job {job.display_id} is held ({pending_reason(self, job).reason}),"
                                                 f" so has priority 0 and no factors, as sprio shows none;"
                                                 f" `vipu release {job.display_id}` lets it run")
                    self.priority(i, now)  # raises: the job is not pending
                wanted.update(pending)
        priority = PriorityRows(now, self.config, self.total, self.fairshare.factors(now, table.running.values())).row
        # a held job's priority is 0 (priority_multifactor.c: "0 means the job is held"): sprio leaves it out
        rows = [priority(q) for q in table.pending.values()
                if (user is None or q.user == user) and (wanted is None or q.id in wanted)
                and not table.jobs[q.id].held]
        return sorted(rows, key=lambda r: (-r.total, self.table.pending[r.job_id].submit_time, r.job_id))

    def info(self, available_mask: int | None = None, drained_mask: int = 0, draining_mask: int = 0,
             completing_mask: int = 0) -> list[Pod64Info]:
        """sinfo: idle, allocated, completing, draining, drained and failed IPUs per Pod64 (IPU-Link domain);
        `completing_mask`: the IPUs shown completing (ipu_status.completing_mask)."""
        if available_mask is None:
            available_mask = self.free_mask
        per = self.pod.ild_ipus
        window = (1 << per) - 1
        rows = []
        for ild in range(self.pod.ilds):
            first = ild * per
            free = (available_mask >> first) & window
            failed = (self.failed_mask >> first) & window
            idle = free.bit_count()
            broken = failed.bit_count()
            drained = ((drained_mask >> first) & window).bit_count()
            draining = ((draining_mask >> first) & window).bit_count()
            completing = ((completing_mask >> first) & window).bit_count()
            allocated = per - idle - broken - drained - draining - completing
            rows.append(Pod64Info(ild, first, per, idle, allocated, broken, largest_free_block(free, per), drained,
                                  draining, completing))
        return rows

    def expected_start(self, spec: JobSpec, now: float, available_mask: int,
                       allowed_masks: Mapping[str, int] | None) -> Expectation:
        """sbatch --test-only: when `spec` would start if it were queued now (expected_start.py)."""
        return expected_start(self, spec, now, available_mask, allowed_masks)

    def startable(self, available_mask: int | None = None, allowed_masks: Mapping[str, int] | None = None) -> int:
        """How many pending jobs could start now, held back by nothing but the scheduler (see startable.py)."""
        return startable(self, available_mask, allowed_masks)


def _held_last(pending: Iterable[Job]) -> Iterator[Job]:
    """Pending jobs in queue order, held ones after the others: their priority is 0 (squeue's sort by priority)."""
    held = []
    for job in pending:
        if job.held:
            held.append(job)
        else:
            yield job
    yield from held


def history_rows(jobs: Iterable[Job], keep: Callable[[Job], bool] | None = None,
                 states: Iterable[JobState] | None = None, duplicates: bool = False) -> list[tuple[float, int, Job]]:
    """QueueView.history's rows, undecorated, as (when the row's state began, job id, row), in that order."""
    wanted = set(states) if states is not None else None
    ended = TERMINAL if wanted is None else wanted & TERMINAL  # only ends count: every job that ran was RUNNING
    rows = []
    for job in jobs:
        if keep is not None and not keep(job):
            continue
        if duplicates:
            rows += [(run.end_time, job.id, run) for run in _runs_ended(job, ended)]
        if wanted is None or job.state in wanted:
            rows.append((_since(job), job.id, job))
    rows.sort(key=lambda row: row[:2])  # stable: a job's runs keep their order
    return rows


def by_job_id(rows: list[tuple[float, int, object]], limit: int = 0) -> list[tuple[float, int, object]]:
    """History rows (history_rows' order: by when each ended) by job id, as sacct lists them ("order by id_job",
    as_mysql_jobacct_process.c); an array's tasks have ids in task order. A job's runs keep the order they ended.
    `limit` > 0: only the `limit` that ended last."""
    rows = rows[-limit:] if limit > 0 else list(rows)
    rows.sort(key=lambda row: row[1])  # stable
    return rows


def _since(job: Job) -> float:
    """When the job entered its state: its end for an ended job (also one cancelled before it ran)."""
    if job.end_time is not None:
        return job.end_time
    return job.history[-1].at if job.history else job.submit_time


def _runs_ended(job: Job, ended: set[JobState] | frozenset[JobState]) -> list[Job]:
    """The job's earlier runs that ended in one of `ended` (it went back to the queue after each), each as the job
    was when that run ended: its state, start, end, exit code and signal, and its IPUs (first_ipu), as the transition
    that ended it keeps them (job_record.EndedRun); sacct --duplicates lists them as rows of their own. A record
    stored before runs were kept: a run that completed exited 0; other codes and the IPUs are unknown."""
    out, start, before = [], None, None
    last = len(job.history) - 1
    for i, t in enumerate(job.history):
        # a record stored before REQUEUED was kept went from RUNNING straight back to PENDING: that run's end
        state = S.REQUEUED if t.state is S.PENDING and before is S.RUNNING else t.state
        if i == last and state is t.state:  # the job's state now: its own row
            break
        if state is S.RUNNING:
            start = t.at
        elif state in ended:
            code, signal, first_ipu = t.run if t.run is not None else (0 if state is S.COMPLETED else None, 0, None)
            out.append(job.updated({"state": state, "start_time": start, "end_time": t.at, "reason": None,
                                    "estimated_start": None, "exit_code": code, "exit_signal": signal,
                                    "first_ipu": first_ipu}))
        before = t.state
    return out
