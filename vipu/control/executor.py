"""The live controller's executor: the scheduler's starts and stops carried out on the Pod.

A StartJob becomes partition `slurm_<id>` on exactly the block the scheduler chose, held by the job (as the V-IPU
Slurm plugin makes them), its machines' actors are brought up in the background, and its workload's runner starts
the run; a kind without a runner (sleep, hold) only needs the driver's timers. A StopJob stops the run's work,
removes its partition and writes the job's output file. Called by the driver under the controller's lock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from vipu.control.driver import StartFailed
from vipu.control.output_files import OutputFiles
from vipu.errors import NotFound, VipuError
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.rules import job_holder
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.job_states import JobState
from vipu.scheduler.workload import Ending

log = logging.getLogger("vipu.executor")

if TYPE_CHECKING:
    from vipu.control.workloads import Runner, WorkloadKind
    from vipu.control.instruments import Metrics
    from vipu.partition.controller import Controller
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.scheduler import Scheduler
    from vipu.workers.fleet import Fleet


class LiveExecutor:
    def __init__(self, scheduler: Scheduler, controller: Controller, machines: Fleet, kinds: Mapping[str, WorkloadKind],
                 runners: Mapping[str, Runner], metrics: Metrics, outputs: OutputFiles | None = None):
        self.scheduler = scheduler
        self.controller = controller
        self.machines = machines
        self.kinds = kinds
        self.runners = runners
        self.metrics = metrics
        self.outputs = outputs or OutputFiles()

    def release(self, partition: str) -> None:
        """Remove a stopped run's partition: its IPUs are free for the next job."""
        try:
            self.controller.partitions.remove(partition, force=True)
        except NotFound:  # removed already (vipu remove partition --force)
            pass

    def output_refusal(self, job: Job) -> str | None:
        """Why a built-in workload's output file cannot be written, were the job to start now, or None (a program's
        runner checks its own)."""
        kind = self.kinds.get(job.spec.workload.kind)
        return self.outputs.refusal(job) if job.spec.output and kind is not None and not kind.streams else None

    def start(self, start: StartJob) -> Ending | None:
        job = self.scheduler.table.jobs[start.job_id]
        refused = self.output_refusal(job)
        if refused:  # as sbatch: the job fails, and no directory is made
            raise StartFailed(refused, JobState.FAILED)
        request = PartitionRequest(name=start.partition, size=start.ipus, allocation=start.allocation,
                                   holder=job_holder(start.job_id), owner=job.user, first_ipu=start.first_ipu,
                                   reconfigurable=True)
        try:
            self.controller.partitions.create(request)
        except VipuError as e:  # like a failed Slurm prolog: the driver ends the job NODE_FAIL, requeued
            raise StartFailed(f"partition {start.partition} could not be created: {e.message}") from None
        self.machines.bring_up(self.controller.state.topology.machines_of(start.first_ipu, start.ipus))
        self.metrics.starts.inc()
        self.metrics.queue_wait.observe(max(0.0, start.start_time - job.waiting_since))  # as a replay's wait
        runner = self.runners.get(start.workload.kind)
        if runner is None:
            return start.workload.ending(start.start_time)
        try:
            return runner.start(start)
        except Exception as e:  # a runner's own fault: the job fails, and is not retried into the same fault
            log.exception("job %s: its %s workload could not start", start.job_id, start.workload.kind)
            raise StartFailed(f"its {start.workload.kind} workload could not start: {type(e).__name__}: {e}",
                              JobState.FAILED) from None

    def stop(self, stop: StopJob) -> bool:
        """Stop the run; True if its runner keeps the partition until the run's work has ended (RunContext.release)."""
        job = self.scheduler.table.jobs.get(stop.job_id)  # None: a leftover partition of a job no longer known
        runner = self.runners.get(job.spec.workload.kind) if job is not None else None
        kept = runner.stop(stop) if runner is not None else False  # kept: its work ends later, and it says when
        self.metrics.completions.labels(stop.state.value).inc()  # REQUEUED for a run `vipu requeue` stopped
        if not kept:
            self.release(stop.partition)
        kind = self.kinds.get(job.spec.workload.kind) if job is not None else None
        if job is not None and kind is not None and not kind.streams:  # a program wrote its own as it ran
            self.outputs.write(stop, job, runner.log_lines(job.id) if runner is not None else [])
        return bool(kept)
