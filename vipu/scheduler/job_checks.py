"""Stored job records checked for a state that agrees with their times, their name and their partition before a
controller serves them.

Why: a COMPLETED job without an end time loaded without a word, and was never purged (purge.py orders ended jobs by
their end) nor shown with one; a record stored under another job's id replaced that job silently; a job with a
negative id could be listed but not addressed; a running job whose partition record was another's was said to have
"survived". A start refuses such records by name instead (or moves them aside: vipu-server
--quarantine-bad-records), as it does partition records that contradict the Pod (partition/stored_checks.py).
"""

from __future__ import annotations

from typing import Iterable

from vipu.partition.rules import job_of_partition, job_partition_name
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState

RUNS = (JobState.RUNNING, JobState.COMPLETING)


def job_contradictions(records: Iterable[tuple]) -> list[tuple[str, str, str]]:
    """(kind, name, why) of each job record whose state its fields, its name or its partition contradict; and of
    each partition record that names as its holder a job that cannot hold it. `records`: (kind, name, record)."""
    records = list(records)
    partitions = {r.name: r for k, _, r in records if k == "partition"}
    found = []
    for kind, name, job in records:
        if not isinstance(job, Job):
            continue
        why = _job_problem(name, job, partitions)
        if why:
            found.append((kind, name, why))
    jobs = {job.id: job for _, _, job in records if isinstance(job, Job)}
    for p in partitions.values():
        why = _holder_problem(p, jobs)
        if why:
            found.append(("partition", p.name, why))
    return found


def _job_problem(name: str, job: Job, partitions: dict) -> str | None:
    state = job.state.value
    if name != str(job.id):
        return f"is stored under the name {name} but its id is {job.id}"
    if job.id < 1:
        return f"has the id {job.id}; job ids start at 1"
    if job.state in TERMINAL and job.end_time is None:
        return f"is {state} but has no end time"
    if job.state in RUNS and (job.start_time is None or job.first_ipu is None):
        return f"is {state} but has no {'start time' if job.start_time is None else 'IPUs'}"
    own = job_partition_name(job.id)
    if job.state in RUNS and job.partition != own:
        return f"is {state} on partition {job.partition}, but a job runs on its own ({own})"
    held = partitions.get(own)
    if job.state in RUNS and held is not None and (held.holder is None or held.first_ipu != job.first_ipu):
        # (held by someone else: the partition's record is named, by _holder_problem)
        return (f"is {state} from IPU {job.first_ipu}, but its partition {own} is held by {held.holder or 'nobody'}"
                f" from IPU {held.first_ipu}")
    return None


def _holder_problem(partition, jobs: dict[int, Job]) -> str | None:
    """A partition held by "job N" must be job N's own (a stopped run keeps it until its program has ended, and a
    restart releases it then), and job N's own must be held by job N, if anyone."""
    number = partition.holder.removeprefix("job ") if partition.holder else None
    owner = job_of_partition(partition.name)
    if number is None or not number.isdigit():
        if owner is not None and partition.holder:
            return f"is job {owner}'s partition but is held by {partition.holder}"
        return None
    if owner != int(number):
        job = jobs.get(int(number))
        state = f", which is {job.state.value}" if job is not None else ", which is not stored"
        own = job_partition_name(int(number))
        return f"is held by job {number}{state}, but a job holds only its own partition ({own})"
    return None
