"""How the program of a run stopped from outside (a cancel, its time limit, a preemption, a requeue) or lost ended,
told once it has.

Why after the job's end: the job ends CANCELLED, TIMEOUT, PREEMPTED or REQUEUED when it is stopped, but its program
ends later, by the SIGTERM, by the SIGKILL KillWait after it (a program deaf to SIGTERM), or by an exit of its own (a
trap that writes a checkpoint and exits). sacct's ExitCode is the batch script's: slurmctld's _job_complete
(job_mgr.c) takes the script's return code for a job already finished, if none was recorded. Until then the job's
signal reads 15 (Job.signal), the signal its run was stopped with. A run that went back to the queue (REQUEUED, or
lost or preempted and requeued) keeps its program's end on the transition that ended it (Job.program_ended), which
sacct --duplicates shows as that run's row (Slurm's own job row of a requeued run says 0:0, its exit code reset by
the requeue before the script ended; the script's end is on that run's .batch step row, which is not kept here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


def program_ended(sched: Scheduler, job_id: int, started: float, exit_code: int, signal: int, now: float) -> bool:
    """Record how the run of job `job_id` that began at `started`, ended without its exit code, ended; False
    (nothing recorded) if that run still runs, its end is known already, or the job left memory."""
    job = sched.table.jobs.get(job_id)
    ended = None if job is None else job.program_ended(started, exit_code, signal)
    if ended is None:
        return False
    sched._commit([ended], now)
    return True
