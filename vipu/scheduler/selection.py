"""Which active jobs a cancel or a signal (scancel, scancel --signal) touches: the jobs named, narrowed by the filters
(job_filter.py), or, with no job named, every active job the caller may see that matches them. Pure: reads the
table, changes nothing."""

from __future__ import annotations

from typing import Callable, Iterable

from vipu.errors import FailedPrecondition, NotFound
from vipu.scheduler.job_filter import JobFilter
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL
from vipu.scheduler.reasons import is_completing
from vipu.scheduler.table import JobTable


def named_jobs(table: JobTable, job_ids: Iterable[int], single: bool, match: JobFilter,
               verb: str = "cancel") -> list[Job]:
    """The active jobs `job_ids` name (an array job's id: its active tasks, unless `single`) that match `match`, each
    once, in order. A job that ended is FailedPrecondition, one that does not match (an array with no task that
    does) NotFound, each naming the job: the caller acts on all of them or none."""
    jobs: dict[int, Job] = {}
    for job_id in job_ids:
        if table.whole_array(job_id, single):
            active = [j for j in table.expand([job_id]) if j.state not in TERMINAL]
            if not active:  # as a single job that ended: scancel's "already completing or completed"
                raise FailedPrecondition(f"array job {job_id}: every task already ended; nothing to {verb}")
            chosen = [j for j in active if match.matches(j)]
            if not chosen:
                raise NotFound(f"array job {job_id} has no active task that matches {match.described()}; nothing"
                               f" to {verb}")
        else:
            job = table.get(job_id)
            if is_completing(table, job):  # scancel's "already completing or completed"
                raise FailedPrecondition(f"job {job.display_id} is already COMPLETING: it ended {job.state.value} and"
                                         f" its program is still ending (SIGKILL once KillWait is over); nothing to"
                                         f" {verb}")
            if job.state in TERMINAL:
                raise FailedPrecondition(f"job {job.display_id} already ended ({job.state.value}); nothing to {verb}")
            if not match.matches(job):
                raise NotFound(f"job {job.display_id} does not match {match.described()} ({match.mismatch(job)});"
                               f" nothing to {verb}")
            chosen = [job]
        jobs.update((j.id, j) for j in chosen)
    return list(jobs.values())


def matching_jobs(table: JobTable, match: JobFilter, visible: Callable[[str], bool]) -> list[Job]:
    """Every active job whose user `visible` accepts (the caller's own, or all for an admin) that matches `match`,
    by id (each array task on its own)."""
    ids = sorted((*table.pending, *table.running))
    return [job for job in (table.jobs[i] for i in ids) if visible(job.user) and match.matches(job)]
