"""How the program of a run stopped from outside (a cancel, its time limit, a preemption) ended, told once it has.

Why after the job's end: the job ends CANCELLED, TIMEOUT or PREEMPTED when it is stopped, but its program ends later,
by the SIGTERM, by the SIGKILL KillWait after it (a program deaf to SIGTERM), or by an exit of its own (a trap that
writes a checkpoint and exits). sacct's ExitCode is the batch script's: slurmctld's _job_complete (job_mgr.c) takes
the script's return code for a job already finished, if none was recorded. Until then the job's signal reads 15
(Job.signal), the signal its run was stopped with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.scheduler.job_states import STOPPED_RUNS, JobState

# and NODE_FAIL: a run the controller's restart ended while its program was still ending (KillWait), whose end
# its supervisor recorded once it came (program_runs.py _old_run_gone), or one lost IPUs ended
STOPPED_OR_LOST = STOPPED_RUNS | {JobState.NODE_FAIL}

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


def program_ended(sched: Scheduler, job_id: int, started: float, exit_code: int, signal: int, now: float) -> bool:
    """Record how the stopped run of job `job_id` that began at `started` ended; False (nothing recorded) if that is
    not the job's last run, its end is known already, or the job left memory."""
    job = sched.table.jobs.get(job_id)
    if job is None or job.state not in STOPPED_OR_LOST or job.start_time != started or job.exit_code is not None:
        return False
    sched._commit([job.updated({"exit_code": exit_code, "exit_signal": signal})], now)
    return True
