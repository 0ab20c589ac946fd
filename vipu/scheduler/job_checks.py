"""Stored job records checked for a state that agrees with their times and placement before a controller serves them.

Why: a COMPLETED job without an end time loaded without a word, and was never purged (purge.py orders ended jobs by
their end) nor shown with one. A start refuses such records by name instead (or moves them aside: vipu-server
--quarantine-bad-records), as it does partition records that contradict the Pod (partition/stored_checks.py).
"""

from __future__ import annotations

from typing import Iterable

from pydantic import BaseModel

from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState

RUNS = (JobState.RUNNING, JobState.COMPLETING)


def job_contradictions(records: Iterable[tuple[str, BaseModel]]) -> list[tuple[str, str, str]]:
    """(kind, name, why) of each job record whose state its fields contradict."""
    found = []
    for kind, job in records:
        if not isinstance(job, Job):
            continue
        state = job.state.value
        if job.state in TERMINAL and job.end_time is None:
            found.append((kind, str(job.id), f"is {state} but has no end time"))
        elif job.state in RUNS and (job.start_time is None or job.first_ipu is None):
            missing = "start time" if job.start_time is None else "IPUs"
            found.append((kind, str(job.id), f"is {state} but has no {missing}"))
    return found
