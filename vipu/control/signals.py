"""scancel --signal: a signal to the process group of each running program chosen, which goes on running (the
program decides what the signal does: a checkpoint on USR1, an end on TERM).

Why only programs: a batch script or --wrap command (a command workload) is a real process group under its
supervisor (vipu/jobs/programs); the built-in kinds (sleep, hold, train) are the controller's own work with no
process to signal, so a signal named at one is refused, saying that `vipu cancel` ends it. A job here is one batch
step and no other: as scancel's default signals a job's steps and not its batch script, the signal reaches every
process the script started but not the script; --batch the script alone (its children not), --full both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.access import Identity
from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.scheduler.job_filter import JobFilter
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

MAX_SIGNAL = 64  # Linux's signals are 1 to 64 (SIGRTMAX)
KILL = 9  # SIGKILL


def send_signal(plane: ControlPlane, ids: list[int], match: JobFilter, single: bool, signal: int,
                identity: Identity, to: str = "children") -> list[Job]:
    """Signal the running programs `ids` name (narrowed by `match`), or with no id every running program the caller
    may see that matches it. A job named that is not a running program is refused, and then none is signalled.
    `to`: which of a program's processes (stepd.command). Returns the jobs signalled."""
    if not 1 <= signal <= MAX_SIGNAL:
        raise InvalidArgument(f"signal is {signal}; give a signal from 1 to {MAX_SIGNAL}, or a name such as USR1")
    with plane.lock:
        scheduler = plane.scheduler
        for job_id in ids:
            identity.check_owner("job", str(job_id), scheduler.table.get(job_id).user)
        if ids:
            jobs = []
            for job_id in ids:
                named = scheduler.named_jobs([job_id], single, match, "signal")
                running = [job for job in named if job.state is JobState.RUNNING]
                if not running:
                    what = (f"array job {job_id} has no running task" if scheduler.table.whole_array(job_id, single)
                            else f"job {named[0].display_id} is {named[0].state.value}")
                    raise FailedPrecondition(f"{what}; only a running job's program can be signalled")
                for job in running:
                    _check_program(plane, job)
                jobs += running
        else:
            chosen = (scheduler.table.jobs[i] for i in scheduler.matching(match, identity.sees))
            jobs = [job for job in chosen if job.state is JobState.RUNNING and _runner(plane, job) is not None]
        for job in jobs:
            _runner(plane, job).signal(job.id, signal, to)
        now = plane.now()
        return [scheduler.job(job.id, now) for job in jobs]


def _runner(plane: ControlPlane, job: Job):
    """The runner that can signal the job's run, or None (a built-in kind: no process)."""
    runner = plane.runners.get(job.spec.workload.kind)
    return runner if runner is not None and hasattr(runner, "signal") else None


def _check_program(plane: ControlPlane, job: Job) -> None:
    if _runner(plane, job) is None:
        raise FailedPrecondition(
            f"job {job.display_id} runs a {job.spec.workload.kind} workload, which the controller runs itself: it has"
            " no process to signal (only a batch script's or --wrap's program has); `vipu cancel` ends it")
