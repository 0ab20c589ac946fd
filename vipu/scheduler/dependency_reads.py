"""What a job's dependency reads of the queue: the state of each job it names, and for a singleton clause whether
an earlier job of its name and user is still active. The cycle's gate (cycle.py) and the dependency a listing shows
(reasons.py) read them alike, from the Scheduler or its read copy (view.py): both have the attributes read here.
"""

from __future__ import annotations

from typing import Callable, Iterator

from vipu.scheduler.deps import Ref, Status, evaluate, unmet
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState

S = JobState


def _reads(s, job: Job) -> tuple[Callable[[Ref], Iterator[tuple[str, bool, bool]]], Callable[[], bool]]:
    jobs, arrays = s.table.jobs, s.table.arrays

    def targets(ref: Ref) -> Iterator[tuple[str, bool, bool]]:
        if isinstance(ref, tuple):  # N_T: that task of array job N
            array, task = ref
            ids = [t for t in arrays.get(array, ()) if jobs[t].array_task_id == task] or [None]
        else:
            ids = arrays.get(ref) or [ref]
        for t in ids:
            target = jobs.get(t)
            if target is None:
                yield ("CANCELLED", False, True)  # forgotten: treated as ended without success
            else:
                started = any(h.state is S.RUNNING for h in target.history)
                yield (target.state.value, started, target.state in TERMINAL)

    def singleton_clear() -> bool:
        active = s.table.active_by_name.get((job.name, job.user), ())
        return not any(i < job.id for i in active)

    return targets, singleton_clear


def dependency_status(s, job: Job) -> Status:
    """'ok', 'wait' or 'never' for the job's dependency (Slurm's Dependency / DependencyNeverSatisfied)."""
    dep = job.spec.parsed_dependency()
    if dep is None:
        return "ok"
    return evaluate(dep, *_reads(s, job))


def shown_dependency(s, job: Job) -> str | None:
    """The job's dependency as squeue %E shows it: what it still waits for, each element with its state
    (deps.unmet); "" once it was met, as Slurm drops a satisfied dependency for good (so a running job's, and an
    ended one's that ran, is ""); None for a job without one."""
    dep = job.spec.parsed_dependency()
    if dep is None:
        return None
    if job.id in s.table.deps_met or (job.state is not S.PENDING and job.start_time is not None):
        return ""
    return unmet(dep, *_reads(s, job), lambda ref: ref in s.table.arrays)
