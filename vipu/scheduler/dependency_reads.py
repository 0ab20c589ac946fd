"""What a job's dependency reads of the queue: the state of each job it names, and for a singleton clause whether
an earlier job of its name and user is still active. The cycle's gate (cycle.py) and the dependency a listing shows
(reasons.py) read them alike, from the Scheduler or its read copy (view.py): both have the attributes read here.

aftercorr, as slurmctld reads it (test_job_dependency): task T of the dependent array waits for task T of array
job N; when there is no such pair (this job is not an array task, N is not an array job, or N has no task T) it
waits for N as a whole, as afterok:N. Slurm accepts all three at submit, and so does vipu.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Iterator

from vipu.scheduler.arrays import parse_array
from vipu.scheduler.deps import Dependency, Reads, Ref, Target, Verdict, evaluate, unmet
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.policies.base import new_record

S = JobState
RUNNING, PENDING = S.RUNNING, S.PENDING
# a job no longer known: treated as ended without success, long ago (after on it is met, as on a cancelled job)
FORGOTTEN = Target("CANCELLED", -math.inf, True)


def task_job(jobs, array: int, task: int) -> int | None:
    """The id of task `task` of array job `array`, if it has one. Why not a walk of the array's tasks: an array's
    tasks are numbered from its id in the order of their sorted indices (submission.build_jobs), so task T is found
    at once, and an aftercorr array of 10,000 tasks costs no more per task than a plain afterok."""
    head = jobs.get(array)
    if head is None or head.array_job_id != array or not head.spec.array:
        return None
    indices = parse_array(head.spec.array).indices
    k = bisect_left(indices, task)
    job = jobs.get(array + k) if k < len(indices) and indices[k] == task else None
    return job.id if job is not None and job.array_job_id == array and job.array_task_id == task else None


def peer(jobs, job: Job, array: int) -> Ref:
    """What aftercorr:`array` waits for in `job`: the task of the same index, else the job named (module doc)."""
    if job.array_task_id is None:
        return array
    task = task_job(jobs, array, job.array_task_id)
    return array if task is None else (array, job.array_task_id)


def _target(target: Job | None) -> Target:
    if target is None:
        return FORGOTTEN
    state = target.state  # (a str: JobState's value without the enum's slow .value)
    for h in reversed(target.history):  # its latest run, as slurmctld resets start_time on a requeue
        if h.state is RUNNING:
            return new_record(Target, (state, h.at, state in TERMINAL))  # (tuple's own: a third of Target()'s cost)
        if h.state is PENDING:
            break  # queued again since its last run, or never ran: after waits for its next start (IS_JOB_PENDING)
    if state not in TERMINAL:
        return new_record(Target, (state, None, False))
    ended = target.end_time if target.end_time is not None else target.submit_time  # (a record without its end)
    return new_record(Target, (state, ended, True))


def _named(jobs, arrays, ref: Ref) -> Iterator[Job | None]:
    """The jobs `ref` names: a job; every task of an array job id; one task for (N, T)."""
    if isinstance(ref, tuple):  # N_T: that task of array job N
        yield jobs.get(task_job(jobs, *ref))  # type: ignore[arg-type]
        return
    for t in arrays.get(ref) or [ref]:
        yield jobs.get(t)


def reads(s, job: Job, now: float) -> Reads:
    jobs, arrays = s.table.jobs, s.table.arrays

    def targets(ref: Ref) -> Iterator[Target]:
        return map(_target, _named(jobs, arrays, ref))

    def singleton_clear() -> bool:
        active = s.table.active_by_name.get((job.name, job.user), ())
        return not any(i < job.id for i in active)

    return new_record(Reads, (targets, singleton_clear, lambda array: peer(jobs, job, array), now))


def expected_met(s, job: Job) -> float | None:
    """When the job's dependency would be met by time alone (squeue --start): each after:ID[+MINUTES] on a started
    ID, its start plus the delay, though no cycle has evaluated it since that start; None when the wait ends with
    an event (an end, a release, a start of a job not started yet)."""
    dep = job.spec.parsed_dependency()
    if dep is None or not any(c.kind == "after" for c in dep.clauses):  # (no time to expect: and cheap to tell)
        return None
    verdict = evaluate(dep, reads(s, job, -math.inf))  # (no element is met by time: each after gives its time)
    return verdict.at if verdict.status == "wait" else None


def watched(jobs, job: Job, dep: Dependency) -> set[int]:
    """The ids whose change of state may change the job's dependency (the table rechecks it then): those named,
    but for aftercorr the peer task's own id, so an array's task ending rechecks only the task paired with it."""
    out = set()
    for c in dep.clauses:
        for ref in c.ids:
            if isinstance(ref, tuple):
                out.add(ref[0])
            elif c.kind == "aftercorr" and job.array_task_id is not None:
                task = task_job(jobs, ref, job.array_task_id)
                out.add(ref if task is None else task)
            else:
                out.add(ref)
    return out


def dependency_status(s, job: Job, now: float) -> Verdict:
    """'ok', 'wait' (with when, if time alone ends it) or 'never' for the job's dependency at `now` (Slurm's
    Dependency / DependencyNeverSatisfied)."""
    dep = job.spec.parsed_dependency()
    if dep is None:
        return Verdict("ok")
    return evaluate(dep, reads(s, job, now))


def shown_dependency(s, job: Job) -> str | None:
    """The job's dependency as squeue %E shows it: what it still waits for, each element with its state
    (deps.unmet) as of the last cycle (after's delays are measured on the scheduler's clock, which only a cycle
    reads); "" once it was met, as Slurm drops a satisfied dependency for good (so a running job's, and an ended
    one's that ran, is ""); None for a job without one."""
    dep = job.spec.parsed_dependency()
    if dep is None:
        return None
    if job.id in s.table.deps_met or (job.state is not S.PENDING and job.start_time is not None):
        return ""
    now = s.last_cycle_at if s.last_cycle_at is not None else float("-inf")
    return unmet(dep, reads(s, job, now), lambda ref: ref in s.table.arrays)
