"""Workload kinds: what the controller does with each kind of job, registered in one table.

Why a registry: the scheduler sees an opaque workload (IPUs, time limit, and its end when that is known in
advance); everything else about a kind lives with the kind. Each registers its spec model (with the scheduler's
JobSpec, vipu/scheduler/workload.py), an admission check that runs before the controller's lock is taken (a
planner search can take seconds and must not stall submissions), whether its runs survive a controller restart,
and a runner that carries out its runs. `sleep` and `hold` need no runner: the driver's timers are enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from vipu.jobs.log_mark import LogMark
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.workload import Ending

if TYPE_CHECKING:
    from vipu.control.lock import Recording
    from vipu.hardware.pod import PodConfig
    from vipu.jobs.sessions.tokens import Sessions
    from vipu.partition.pod_state import PodState
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.job_spec import JobSpec
    from vipu.scheduler.job_states import JobState
    from vipu.store import Store
    from vipu.workers.fleet import Fleet


@dataclass(frozen=True)
class RunSettings:
    """How runs behave on this controller (vipu-server's flags)."""

    kill_wait_s: float = 30.0  # Slurm's KillWait: SIGTERM, then SIGKILL this much later
    state_dir: Path | None = None  # where the controller keeps its state (programs' scripts are spooled under it)
    modelled_time_scale: float = 1.0  # a modelled training run holds its partition for steps x the predicted step
    # time x this (vipu/jobs/train/modelled.py)
    output_dirs: tuple[Path, ...] = ()  # vipu-server --output-dir: where built-in workloads' output may go


@dataclass(frozen=True)
class RunContext:
    """What a kind's runner may use of the controller; the control plane builds it."""

    pod: PodConfig
    store: Store  # the runner's own records (e.g. "job_result"), committed in the lock's transaction when held
    lock: Recording  # the state lock, held to record what happened to a run (lock.py)
    machines: Fleet
    now: Callable[[], float]
    job: Callable[[int], "Job | None"]  # the job's record now
    still_running: Callable[[int, float], bool]  # (job id, run start): is that run of the job still going
    finish: Callable[..., None]  # (job id, run start, exit code, state, signal=0, records=(), why=None): under the lock
    stopped_end: Callable[[int, float, int, int], None]  # (job id, run start, exit code, signal): how the program
    # of a run stopped from outside ended, once it has (vipu/scheduler/stopped_ends.py); under the lock
    wake: Callable[[], None]  # let the scheduling loop use what a finish freed
    release: Callable[[str], None]  # (partition): remove the partition a stopped run kept (Runner.stop); locks
    pod_state: Callable[[], PodState]  # partitions, agents, failed IPUs: read under the lock (its topology: any time)
    failed_mask: Callable[[], int]  # the failed IPUs now, any time
    api_address: Callable[[], tuple[str, int]]  # where the job's processes reach the controller (IPUOF_VIPU_API_*)
    run_as: Callable[[str], "dict | None"]  # a vipu user's Unix account for their programs ({uid, gid, groups}),
    # None to run as the controller's own user; raises when that user's programs may not run (call under the lock)
    sessions: Sessions  # programs' sessions on their IPUs, by run token (the DeviceService looks them up)
    device_environment: Callable[[], dict[str, str]]  # how a program reaches the DeviceService (VIPU_DEVICE_*);
    # {} when it is off: programs then get no session
    settings: RunSettings = RunSettings()


class Runner(Protocol):
    """Carries out the runs of one workload kind in the live controller. One whose runs may end while no controller
    hears also has `recorded_end(job) -> RunExit | None`: how the job's latest run ended, as recorded where it ran
    (a program's supervisor's file), for the restart that ends it (control/queue_rebuild.py); and
    `ask_ends(jobs)`, called first without the state lock: what recorded_end needs of other machines is asked there."""

    def start(self, start: StartJob) -> Ending | None:
        """Start a run (called under the lock, its partition made); returns its end if known now."""

    def stop(self, stop: StopJob) -> float | None:
        """The run ended from outside (cancel, time limit, preemption, lost IPUs): stop its work. A number of
        seconds: its work goes on ending for at most that long (KillWait), so it keeps the partition and calls
        RunContext.release once done; None: it has ended."""

    def log_lines(self, job_id: int) -> list[str]:
        """`vipu logs ID`: what the job's latest run logged."""

    def log_after(self, job_id: int, mark: LogMark | None, partial: bool = False) -> tuple[list[str], LogMark]:
        """`vipu logs -f ID`: the whole lines the job's latest run logged after `mark` (None: as far back as `vipu
        logs` shows), and the mark to read from next. A mark of an earlier run reads the latest from its start.
        `partial`: a line not ended yet too, the last, with the mark open (only a program's output has such)."""

    def record(self, job_id: int):
        """The latest run's record (with summary() and run_data()), or None."""

    def progress(self) -> dict:
        """Running jobs' step reports so far, by job id (metrics, `vipu top`)."""

    def forget(self, job_id: int) -> None:
        """The job left the controller's memory (scheduler/purge.py): drop what is kept of its ended runs; its
        stored records stay, and record() and log_lines() read them."""

    def shutdown(self) -> None:
        """The controller stops: runs in its process end with it, and the restart records how."""


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    admit: Callable[["JobSpec", "PodConfig"], None] | None = None  # raises InvalidArgument; before the lock
    resumable: bool = True  # its runs go on across a controller restart (else they end NODE_FAIL, requeued)
    runner: Callable[[RunContext], Runner] | None = None
    streams: bool = False  # a program writing stdout and stderr to the job's output and error files as it runs;
    # else the controller writes the output file when a run ends (how it ended, and what the runner logged)
    records: tuple[str, ...] = ()  # kinds of store records its runner keeps, named by job id: purged with the job


def builtin_kinds() -> dict[str, WorkloadKind]:
    """The kinds this controller runs, by name."""
    from vipu.jobs.admission import check_train
    from vipu.jobs.programs.command_spec import CommandWorkload
    from vipu.jobs.programs.program_runs import ProgramRuns
    from vipu.jobs.train.runs import TrainRuns
    from vipu.jobs.train_spec import TrainWorkload
    from vipu.scheduler.workload import KINDS

    assert KINDS["train"] is TrainWorkload and KINDS["command"] is CommandWorkload  # they register on import
    # a training run lives in the controller's process, and a program's supervisor dies with it: a restart ends both
    kinds = [WorkloadKind("sleep"), WorkloadKind("hold"),
             WorkloadKind("train", admit=check_train, resumable=False, runner=TrainRuns, records=("job_result",)),
             WorkloadKind("command", resumable=False, runner=ProgramRuns, streams=True, records=("program_run",))]
    return {k.name: k for k in kinds}
