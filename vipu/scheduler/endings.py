"""Ending runs and jobs: a cancel, a requeue, a workload's end, a time limit reached, IPUs failed.

Why one place: each ends in the same three steps, in this order: commit the jobs' new records, charge the ended
runs' fair share, return the StopJobs that remove their partitions (saying whether the job went back to the
queue). The cycle's evictions end their victims' runs through `end_runs` too. Scheduler's methods of the same names
call these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.scheduler.bits import block
from vipu.scheduler.effects import Effect, StopJob
from vipu.scheduler.job_filter import NO_FILTER, JobFilter
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import REQUEUABLE, JobState, check_requeue
from vipu.scheduler.selection import named_jobs

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

S = JobState
FINAL_STATES = (S.COMPLETED, S.FAILED, S.CANCELLED, S.TIMEOUT, S.NODE_FAIL)


def end_runs(s: Scheduler, changed: list[Job], ran: list[Job], now: float, state: JobState) -> list[Effect]:
    """Commit `changed` (new records), then end the runs of `ran` (jobs that held a partition until now, in
    their old records): charge their fair share and return the StopJobs that remove their partitions, each
    saying whether its job went back to the queue."""
    s._commit(changed, now)
    requeued = {j.id for j in changed if j.state is S.PENDING} if ran else ()  # a wave's starts end no run
    for job in ran:
        charge(s, job, now)
    return [StopJob(job.id, job.partition, state, job.id in requeued, job.first_ipu, job.ipus) for job in ran]


def charge(s: Scheduler, job: Job, now: float) -> None:
    """Fair-share usage of a run that just ended (called after its commit)."""
    if job.start_time is not None:
        s.fairshare.charge(job.user, job.ipus * max(0.0, now - job.start_time), now)


def cancel(s: Scheduler, job_ids: Iterable[int], now: float, single: bool = False, match: JobFilter = NO_FILTER,
           why: str | None = None, uid: int | None = None) -> list[Effect]:
    """Cancel pending and running jobs (an array job id cancels its active tasks, unless `single`), only those
    that match `match` (scancel's filters narrow: selection.py); all or nothing. `why`, when something other
    than a cancel of the job ends it (its partition removed), is kept as what ended it; `uid`, who asked.

    A job named directly that already ended is FailedPrecondition; one that does not match, NotFound."""
    jobs = named_jobs(s.table, job_ids, single, match)
    given = {key: v for key, v in (("ended_by", why), ("cancelled_by_uid", uid)) if v is not None}
    changed = [job.moved(S.CANCELLED, now, end_time=now, **given) for job in jobs]
    running = [job for job in jobs if job.state is not S.PENDING]
    return end_runs(s, changed, running, now, S.CANCELLED)


def requeue(s: Scheduler, job_id: int, now: float, single: bool = False, hold: bool = False) -> list[Effect]:
    """Put a running or finished job back in the queue under the same id (scontrol requeue; with `hold`,
    requeuehold: held by its user); an array job id requeues every task that is not pending, unless `single`."""
    if s._whole_array(job_id, single):
        jobs = [j for j in s._expand([job_id]) if j.state is not S.PENDING and j.state in REQUEUABLE]
        if not jobs:
            raise FailedPrecondition(f"array job {job_id} has no running or ended task to requeue")
    else:
        jobs = [s._get(job_id)]
    check_requeue(jobs)
    ran = [j for j in jobs if j.state in (S.RUNNING, S.COMPLETING)]
    back = [j.requeued(now, hold) for j in jobs]
    return end_runs(s, back, ran, now, S.REQUEUED)


def job_finished(s: Scheduler, job_id: int, now: float, state: JobState | None = None, exit_code: int = 0,
                 signal: int = 0, why: str | None = None) -> list[Effect]:
    """The workload of a running job ended, with `exit_code`, or ended by `signal` (state None: COMPLETED on
    exit code and signal 0, else FAILED); `why`, when its run could not start, is kept as what ended it."""
    job = s._get(job_id)
    if job.state not in (S.RUNNING, S.COMPLETING):
        raise FailedPrecondition(f"job {job.display_id} is {job.state.value}, not running; its end was already recorded")
    if state is None:
        state = S.COMPLETED if exit_code == 0 and signal == 0 else S.FAILED
    if state not in FINAL_STATES:
        raise InvalidArgument(f"state {state.value} is not a final state; use one of {', '.join(f.value for f in FINAL_STATES)}")
    given = {"ended_by": why} if why else {}
    ended = job.moved(state, now, end_time=now, exit_code=exit_code, exit_signal=signal, **given)
    requeued = state is S.NODE_FAIL and job.spec.requeue
    return end_runs(s, [ended.requeued(now) if requeued else ended], [job], now, state)


def time_limit_reached(s: Scheduler, job_id: int, started: float, now: float) -> list[Effect]:
    """The run of the job that began at `started` reached its time limit at `now` (the driver calls this at the
    limit itself, which after a restart can be well before the present): it ends TIMEOUT. Nothing if that run
    already ended."""
    job = s.table.running_since(job_id, started)
    if job is None or now < job.end_by:  # ended already, or its limit was raised since (scontrol update)
        return []
    return end_runs(s, [job.moved(S.TIMEOUT, now, end_time=now)], [job], now, S.TIMEOUT)


def fail_ipus(s: Scheduler, ipus: Iterable[int], now: float, cause: str = "") -> list[Effect]:
    """IPUs failed: no job is placed on them, and running jobs on them end NODE_FAIL (requeued if allowed), each
    recording which of its IPUs failed and `cause` ("vipu-admin fail ipus"), if given."""
    mask = 0
    for ipu in ipus:
        if not 0 <= ipu < s.total:
            raise InvalidArgument(f"ipu {ipu} does not exist; {s.pod.name} has IPUs 0 to {s.total - 1}")
        mask |= 1 << ipu
    hit = sorted((s.table.jobs[r.id] for r in s.table.running.values() if block(r.first_ipu, r.ipus) & mask),
                 key=lambda j: j.id)
    changed = []
    for job in hit:
        mine = [i for i in range(job.first_ipu, job.first_ipu + job.ipus) if mask >> i & 1]
        why = f"IPU{'s' if len(mine) > 1 else ''} {', '.join(map(str, mine))} of its partition failed"
        why += f" ({cause})" if cause else ""
        ended = job.moved(S.NODE_FAIL, now, end_time=now, ended_by=why)
        changed.append(ended.requeued(now) if job.spec.requeue else ended)
    effects = end_runs(s, changed, hit, now, S.NODE_FAIL)
    s.failed_mask |= mask
    return effects
