"""What the caller must do after a scheduler call: start or stop a job's partition and workload.

Why effects instead of callbacks: the scheduler stays pure and synchronous; the live server turns a StartJob into
a partition created at `first_ipu` (the block `place` picks on `place_mask`) plus a running workload, and a StopJob
into a stopped workload and a removed partition, while the trace replay only schedules the job's end in virtual
time. Stops always come before starts in a list, so evicted IPUs are free before they are reused.
"""

from __future__ import annotations

from typing import NamedTuple

from vipu.scheduler.workload import Workload
from vipu.scheduler.job_states import JobState


class StartJob(NamedTuple):
    job_id: int
    partition: str  # slurm_<id>
    ipus: int
    first_ipu: int
    place_mask: int
    start_time: float
    end_by: float  # start + time limit: the job is TIMEOUT past this
    workload: Workload  # opaque: its kind's executor runs it
    allocation: str | None
    after: tuple[int, ...] = ()  # jobs this cycle preempted whose IPUs it takes (claims.py)


class StopJob(NamedTuple):
    job_id: int
    partition: str
    state: JobState  # how this run ended: COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, REQUEUED
    requeued: bool  # the job is PENDING again under the same id
    first_ipu: int | None = None  # the block the run held (None: not known, as for a partition left from before)
    ipus: int = 0


Effect = StartJob | StopJob
