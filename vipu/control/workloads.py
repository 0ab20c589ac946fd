"""Workload kinds: what the controller does with each kind of job, registered in one table.

Why a registry: the scheduler sees an opaque workload (IPUs, time limit, and its end when that is known in
advance); everything else about a kind lives with the kind. Each registers its spec model (with the scheduler's
JobSpec, vipu/scheduler/workload.py), an admission check that runs before the controller's lock is taken (a
planner search can take seconds and must not stall submissions), whether its runs survive a controller restart,
and a runner that carries out its runs. `sleep` and `hold` need no runner: the driver's timers are enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.workload import Ending

if TYPE_CHECKING:
    from vipu.control.lock import StateLock
    from vipu.hardware.pod import PodConfig
    from vipu.partition.pod_state import PodState
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.job_spec import JobSpec
    from vipu.scheduler.job_states import JobState
    from vipu.store import Store
    from vipu.workers.fleet import Fleet


@dataclass(frozen=True)
class RunContext:
    """What a kind's runner may use of the controller; the control plane builds it."""

    pod: PodConfig
    store: Store  # the runner's own records (e.g. "job_result"), committed in the lock's transaction when held
    lock: StateLock
    machines: Fleet
    now: Callable[[], float]
    job: Callable[[int], "Job | None"]  # the job's record now
    still_running: Callable[[int, float], bool]  # (job id, run start): is that run of the job still going
    finish: Callable[[int, float, int, "JobState | None"], None]  # (job id, run start, exit code, state): under lock
    wake: Callable[[], None]  # let the scheduling loop use what a finish freed
    pod_state: Callable[[], PodState]  # partitions, agents, failed IPUs: read under the lock (its topology: any time)
    failed_mask: Callable[[], int]  # the failed IPUs now, any time
    api_address: Callable[[], tuple[str, int]]  # where the job's processes reach the controller (IPUOF_VIPU_API_*)


class Runner(Protocol):
    """Carries out the runs of one workload kind in the live controller."""

    def start(self, start: StartJob) -> Ending | None:
        """Start a run (called under the lock, its partition made); returns its end if known now."""

    def stop(self, stop: StopJob) -> None:
        """The run ended from outside (cancel, time limit, preemption, lost IPUs): stop its work."""

    def log_lines(self, job_id: int) -> list[str]:
        """`vipu logs ID`: what the job's latest run logged."""

    def record(self, job_id: int):
        """The latest run's record (with summary() and run_data()), or None."""

    def progress(self) -> dict:
        """Running jobs' step reports so far, by job id (metrics, `vipu top`)."""

    def shutdown(self) -> None:
        """The controller stops: runs in its process end with it, and the restart records how."""


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    admit: Callable[["JobSpec", "PodConfig"], None] | None = None  # raises InvalidArgument; before the lock
    resumable: bool = True  # its runs go on across a controller restart (else they end NODE_FAIL, requeued)
    runner: Callable[[RunContext], Runner] | None = None


def builtin_kinds() -> dict[str, WorkloadKind]:
    """The kinds this controller runs, by name."""
    from vipu.jobs.admission import check_train
    from vipu.jobs.train_spec import TrainWorkload
    from vipu.jobs.train.runs import TrainRuns
    from vipu.scheduler.workload import KINDS

    assert KINDS["train"] is TrainWorkload  # its spec model registers itself on import
    # a training run lives in the controller's process, so a restart ends it
    kinds = [WorkloadKind("sleep"), WorkloadKind("hold"),
             WorkloadKind("train", admit=check_train, resumable=False, runner=TrainRuns)]
    return {k.name: k for k in kinds}
