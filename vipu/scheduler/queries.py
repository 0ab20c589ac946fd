"""Read-only views for the CLI edges: squeue, sacct, sprio and sinfo.

Why jobs are decorated on the way out: reasons and estimated starts belong to the last cycle, not to the stored
record (see job_record.py), so each returned copy carries the values of the moment it was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from vipu.errors import FailedPrecondition
from vipu.partition.placement import largest_free_block
from vipu.partition.rules import named
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.multifactor import breakdown, qos_factors
from vipu.scheduler.policies.base import BEGIN_TIME, HELD, HELD_ADMIN, PendingInfo
from vipu.scheduler.job_states import TERMINAL, JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

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


MANY_IDS = 20  # more pending jobs than this in a refusal: no command line of their ids


def pending_reason(s: Scheduler, job: Job) -> PendingInfo | None:
    """Why a pending job waits and when it may start, as `vipu queue` shows it: its hold, its begin time, its
    dependency, else what the last cycle said of it; None when no cycle has considered it yet. Builds no copy of
    the job (startable asks it of every pending job that fits)."""
    table = s.table
    if job.held:
        return PendingInfo(HELD_ADMIN if job.admin_hold else HELD)
    if job.id in table.not_begun:  # like Slurm's StartTime for BeginTime: no earlier than the begin time
        return PendingInfo(BEGIN_TIME, job.begin_time)
    info = table.gate_info.get(job.id)  # waiting for a dependency (None until a cycle has evaluated it)
    seq = table.ready_seq.get(job.id)
    if seq is not None and seq <= s.last_cycle_seq:  # the last cycle considered it
        info = s.pending_info.get(job.id)
        if info is None and s.last_decision is not None:
            info = s.last_decision.explain(table.pending[job.id])  # a job the walk did not reach
    return info


def decorate(s: Scheduler, job: Job, factors: tuple[dict[str, float], dict[str, float]] | None = None,
             now: float = 0.0) -> Job:
    """A pending job with its reason and estimated start (pending_reason), and given `factors` (FairShare.factors
    at `now`, and qos_factors) its priority; other jobs as they are."""
    if job.state is not S.PENDING:
        return job
    table = s.table
    reason, estimate = pending_reason(s, job) or (None, None)
    if factors is not None:  # one copy with all three: a listing of 10,000 pending jobs makes 10,000 of them
        return job.updated({"reason": reason, "estimated_start": estimate,
                            "priority": breakdown(table.pending[job.id], now, s.config, s.total, *factors)})
    if reason == job.reason and estimate == job.estimated_start:
        return job
    return job.updated({"reason": reason, "estimated_start": estimate})


def queue(s: Scheduler, keep: Callable[[Job], bool] | None, now: float | None = None) -> Iterator[Job]:
    """Lazily: a listing of 20,000 jobs is taken a few at a time (the control plane paces it)."""
    jobs = s.table.jobs
    running = sorted((jobs[i] for i in s.table.running), key=lambda j: (j.start_time, j.id))
    at = s.last_cycle_at if s.last_cycle_at is not None else max((j.submit_time for j in jobs.values()), default=0.0)
    pending = (jobs[q.id] for q in s.order.iterate(at, s.table.running.values(), gated=True))
    factors = None if now is None else (s.fairshare.factors(now, s.table.running.values()), qos_factors(s.config))
    return (decorate(s, j, factors, now) for j in chain(running, pending) if keep is None or keep(j))


def history(s: Scheduler, keep: Callable[[Job], bool] | None, states: Iterable[JobState] | None,
            duplicates: bool, limit: int) -> list[Job]:
    wanted = set(states) if states is not None else None
    ended = TERMINAL if wanted is None else wanted & TERMINAL  # only ends count: every job that ran was RUNNING
    rows = []  # (when the row's state began, job id, row): the order runs ended in, ties by id
    for job in s.table.jobs.values():
        if keep is not None and not keep(job):
            continue
        if duplicates:
            rows += [(run.end_time, job.id, run) for run in _runs_ended(job, ended)]
        if wanted is None or job.state in wanted:
            rows.append((_since(job), job.id, job))
    rows.sort(key=lambda row: row[:2])  # stable: a job's runs keep their order
    if limit > 0:
        rows = rows[-limit:]
    return [decorate(s, job) for _, _, job in rows]


def _since(job: Job) -> float:
    """When the job entered its state: its end for an ended job (also one cancelled before it ran)."""
    if job.end_time is not None:
        return job.end_time
    return job.history[-1].at if job.history else job.submit_time


def _runs_ended(job: Job, ended: set[JobState] | frozenset[JobState]) -> list[Job]:
    """The job's earlier runs that ended in one of `ended` (it went back to the queue after each), each as the job
    was when that run ended: its state, start, end and, for a run that completed, exit code 0 (a failed run's
    code is not kept; sacct --duplicates lists them as rows of their own)."""
    out, start = [], None
    for t in job.history[:-1]:  # the last entry is the job's state now: its own row
        if t.state is S.RUNNING:
            start = t.at
        elif t.state in ended:
            out.append(job.updated({"state": t.state, "start_time": start, "end_time": t.at, "reason": None,
                                    "estimated_start": None, "exit_code": 0 if t.state is S.COMPLETED else None}))
    return out


def priorities(s: Scheduler, now: float, user: str | None, ids: Iterable[int] | None,
               single: bool) -> list[PriorityBreakdown]:
    wanted: set[int] | None = None
    if ids is not None:
        wanted = set()
        for i in ids:
            pending = [j.id for j in s.table.expand([i], single) if j.id in s.table.pending]
            if not pending:
                s.priority(i, now)  # raises: the job does not exist, or is not pending
            wanted.update(pending)
    factors, qos = s.fairshare.factors(now, s.table.running.values()), qos_factors(s.config)
    rows = [breakdown(q, now, s.config, s.total, factors, qos) for q in s.table.pending.values()
            if (user is None or q.user == user) and (wanted is None or q.id in wanted)]
    return sorted(rows, key=lambda r: (-r.total, s.table.pending[r.job_id].submit_time, r.job_id))


def info(s: Scheduler, available_mask: int | None, drained_mask: int = 0, draining_mask: int = 0) -> list[Pod64Info]:
    if available_mask is None:
        available_mask = s.free_mask
    per = s.pod.ild_ipus
    window = (1 << per) - 1
    rows = []
    for ild in range(s.pod.ilds):
        first = ild * per
        free = (available_mask >> first) & window
        failed = (s.failed_mask >> first) & window
        idle = free.bit_count()
        broken = failed.bit_count()
        drained = ((drained_mask >> first) & window).bit_count()
        draining = ((draining_mask >> first) & window).bit_count()
        allocated = per - idle - broken - drained - draining
        rows.append(Pod64Info(ild, first, per, idle, allocated, broken, largest_free_block(free, per), drained,
                              draining))
    return rows


def check_allocation_unused(s: Scheduler, allocation: str) -> None:
    """FailedPrecondition naming the pending jobs that asked for `allocation` (each array task on its own), and the
    cancel that clears them."""
    waiting = [s.table.jobs[i].display_id for i, q in sorted(s.table.pending.items()) if q.allocation == allocation]
    if waiting:
        how = f" (`vipu cancel {' '.join(waiting)}`)" if len(waiting) <= MANY_IDS else ""
        raise FailedPrecondition(f"allocation {allocation} has {named('pending job', waiting)} that asked for it;"
                                 f" cancel {'it' if len(waiting) == 1 else 'them'} first{how}")
