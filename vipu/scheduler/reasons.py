"""Why a pending job waits, and when it may start, as `vipu queue` shows it (squeue's NODELIST(REASON)).

Why worked out on the way out: reasons and estimated starts belong to the last cycle, not to the stored record (see
job_record.py), so each job read carries the values of the moment it was asked for. `s` is the Scheduler or its read
copy (view.py): both have the attributes read here.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from vipu.scheduler.dependency_reads import expected_met, shown_dependency
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.multifactor import breakdown
from vipu.scheduler.policies.base import BEGIN_TIME, CLEANING, DEPENDENCY, HELD, HELD_ADMIN, RESOURCES, PendingInfo

S = JobState
CLAIMING = PendingInfo(RESOURCES)


class Row(NamedTuple):
    """A job as a listing shows it: its record, and for a pending job its reason, estimated start and priority.
    Cheaper to keep than a decorated copy of the record, which `decorated()` makes when the row is shown."""

    job: Job
    reason: str | None = None
    estimated_start: float | None = None
    priority: PriorityBreakdown | None = None
    dependency: str | None = None  # shown_dependency's, for a job with one

    def decorated(self) -> Job:
        job = self.job
        shown = {} if self.dependency is None else {"unmet_dependency": self.dependency}
        if job.state is not S.PENDING:
            return job.updated(shown) if shown else job
        changes = {"reason": self.reason, "estimated_start": self.estimated_start, **shown}
        if self.priority is not None:
            changes["priority"] = self.priority
        elif self.reason == job.reason and self.estimated_start == job.estimated_start and not shown:
            return job
        return job.updated(changes)


def pending_reason(s, job: Job, now: float | None = None) -> PendingInfo | None:
    """Why a pending job waits and when it may start, as `vipu queue` shows it at `now` (None: as the last cycle
    left it): its hold, its begin time, its dependency, else what the last cycle said of it; None when no cycle has
    considered it yet. Builds no copy of the job (startable asks it of every pending job that fits)."""
    table = s.table
    if job.held:
        return PendingInfo(HELD_ADMIN if job.admin_hold else HELD)
    if job.id in table.cleaning:
        return PendingInfo(CLEANING)
    if job.id in table.claims:  # preempted jobs' IPUs kept for it until their runs end, as Slurm's Resources
        return _claiming(table, table.claims[job.id].start.after, now)
    if job.id in table.not_begun:  # like Slurm's StartTime for BeginTime: no earlier than the begin time
        dependency = _dependency(s, job)  # nor than the end of a dependency's delay (after:ID+MINUTES)
        later = None if dependency is None else dependency.estimated_start
        return PendingInfo(BEGIN_TIME, job.begin_time if later is None else max(job.begin_time, later))
    info = _dependency(s, job)  # waiting for a dependency (None until a cycle has evaluated it)
    seq = table.ready_seq.get(job.id)
    if seq is not None and seq <= s.last_cycle_seq:  # the last cycle considered it
        info = s.pending_info.get(job.id)
        if info is None and s.last_decision is not None:
            info = s.last_decision.explain(table.pending[job.id])  # a job the walk did not reach
    return info


def _claiming(table, victims: tuple[int, ...], now: float | None) -> PendingInfo:
    """A preemptor's wait: it starts once its victims' runs are torn down, by the end of their KillWait at the
    latest (Teardown.free_by), as backfill counts a cancelled run's IPUs; no estimate while any bound is unknown.
    A victim still torn down past its KillWait (its program not yet reaped) frees them at any moment: `now`, not a
    start already past."""
    ends = [table.cleaning[v].free_by for v in victims if v in table.cleaning]
    last = max(ends, default=math.inf)
    if last == math.inf:
        return CLAIMING
    return PendingInfo(RESOURCES, last if now is None else max(last, now))


def _dependency(s, job: Job) -> PendingInfo | None:
    """The dependency's wait as the last gate left it (table.gate_info); for an after wait on jobs started since,
    when its delay ends (dependency_reads.expected_met). An after wait on a job not started has no expected start,
    as in squeue --start: that job may hold the very IPUs this one needs, so its expected start plus the delay
    would promise a start that cannot happen."""
    info = s.table.gate_info.get(job.id)
    if info is None or info.estimated_start is not None or info.reason != DEPENDENCY:
        return info
    at = expected_met(s, job)
    return info if at is None else PendingInfo(DEPENDENCY, at)


def is_completing(table, job: Job) -> bool:
    """Its run ended and is still torn down (a requeued job's is pending instead: reason Cleaning)."""
    return job.id in table.cleaning and job.state in TERMINAL


def completing(table, job: Job) -> Job:
    """The job as squeue and scontrol show it: one whose run ended but is still torn down (its program given
    KillWait to end, table.cleaning) shows COMPLETING (CG) until the teardown is done, as Slurm sets JOB_COMPLETING
    over the end it recorded; sacct (`vipu history`) shows that end."""
    if is_completing(table, job):  # (its ExitCode kept: 0:15 for a stopped run)
        return job.updated({"state": S.COMPLETING, "exit_signal": job.signal})
    return job


def row(s, job: Job, factors: tuple[dict[str, float], dict[str, float]] | None = None,
        now: float | None = None) -> Row:
    """A job's row at `now`: a pending one with its reason and estimated start (pending_reason), and given `factors`
    (FairShare.factors at `now`, and qos_factors) its priority; one with a dependency, that as squeue shows it."""
    dependency = None if job.spec.dependency is None else shown_dependency(s, job)
    if job.state is not S.PENDING:
        return Row(job, dependency=dependency)
    reason, estimate = pending_reason(s, job, now) or (None, None)
    priority = None if factors is None else breakdown(s.table.pending[job.id], now or 0.0, s.config, s.total, *factors)
    return Row(job, reason, estimate, priority, dependency)


def decorate(s, job: Job, now: float | None = None) -> Job:
    """The job with its reason and estimated start at `now`, if pending."""
    return row(s, job, now=now).decorated()
