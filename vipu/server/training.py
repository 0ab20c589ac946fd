"""Running `train` workloads for the live controller: each job trains in a thread of its own on its partition's
machines, and its results (loss per step, emulated step time and throughput on the real Pod, per-IPU utilisation and
memory, link traffic, the planner's prediction) are stored with the job.

What the job's processes see: when the job starts, the controller computes, from its partition `slurm_<id>` and
the controller's own address, the environment each poprun instance of the job would see (vipu/jobs/train/poprun.py:
IPUOF_VIPU_API_HOST/PORT/PARTITION_ID/GCD_ID/TIMEOUT, IPUOF_LOG_LEVEL, POPLAR_TARGET_OPTIONS and POPDIST_*), hands
it to the training, whose instances take their replicas from it, and stores it with the job's result; `vipu logs`
prints it before the steps.

Where the data moves: with machine actors (`--ray local` or an address) the job's tensors live on its machines'
actors and every collective moves them through Ray (RayTransport); with `--ray off` the same training runs on an
in-process transport. Either way the numbers are the same: emulated time comes from the cost models, not from how
long the host took (that is reported separately, as wall-clock).
"""

from __future__ import annotations

import logging
import threading

from pydantic import BaseModel

from vipu.errors import MachineLost
from vipu.jobs.train.poprun import partition_environments, summary_lines
from vipu.jobs.train.report import StepReport, TrainingResult
from vipu.jobs.train.runner import local_transport, run_training
from vipu.partition.rules import job_partition_name
from vipu.scheduler.states import JobState

log = logging.getLogger("vipu.training")


class JobResult(BaseModel):
    """What the store keeps for a job that trained (kind "job_result", name = job id)."""

    name: str
    result: TrainingResult | None = None
    error: str | None = None
    environment: list[dict[str, str]] = []  # what each poprun instance of the job saw, in instance order


class Training:
    def __init__(self, runtime):
        self.rt = runtime
        self.progress: dict[int, list[StepReport]] = {}  # running jobs' steps so far (for logs and metrics)
        self.environments: dict[int, list[dict[str, str]]] = {}  # running jobs' instance environments
        self.results: dict[int, JobResult] = {}

    def environment(self, job_id: int, workload) -> list[dict[str, str]]:
        """The environment of each poprun instance of the job, from its partition slurm_<id> as the controller
        holds it now and the address jobs reach the controller at (the caller holds the runtime lock)."""
        state = self.rt.controller.state
        partition = state.get("partition", job_partition_name(job_id))
        return partition_environments(partition, state, self.rt.api_host, self.rt.api_port, workload.layout)

    def start(self, job_id: int, started: float, first_ipu: int, workload) -> None:
        """Called by the dispatcher, under the runtime lock, once the job's partition exists."""
        self.progress[job_id] = []
        problem: Exception | None = None
        try:
            environment = self.environment(job_id, workload)
        except Exception as e:  # noqa: BLE001 - the run then fails with the reason instead of training blind
            environment, problem = [], e
        self.environments[job_id] = environment
        threading.Thread(target=self._run, args=(job_id, started, first_ipu, workload, environment, problem),
                         daemon=True, name=f"vipu-train-{job_id}").start()

    def _still_running(self, job_id: int, started: float) -> bool:
        return self.rt.scheduler.table.running_since(job_id, started) is not None

    def _transport_factory(self, first_ipu: int, ipus: int):
        fleet = self.rt.fleet
        if not fleet.enabled:
            return local_transport
        from vipu.fabric.ray_transport import RayTransport

        pool = fleet.actors_for(self.rt.controller.state.topology.machines_of(first_ipu, ipus))
        return lambda group: RayTransport.for_group(pool, group)

    def _run(self, job_id: int, started: float, first_ipu: int, workload, environment: list[dict[str, str]],
             problem: Exception | None) -> None:
        pod = self.rt.controller.pod
        exit_code, state = 0, None  # state None: COMPLETED or FAILED by the exit code
        try:
            if problem is not None:
                raise problem  # the poprun environment could not be built: the job fails with that reason
            factory = self._transport_factory(first_ipu, workload.layout.ipus)
            result = run_training(
                workload, pod, first_ipu, factory,
                on_step=self.progress[job_id].append,
                should_stop=lambda: not self._still_running(job_id, started),
                environments=environment,
            )
            record = JobResult(name=str(job_id), result=result, environment=environment)
        except Exception as e:  # noqa: BLE001 - a failed run ends the job FAILED with the reason in its logs
            record = JobResult(name=str(job_id), error=f"{type(e).__name__}: {getattr(e, 'message', e)}",
                               environment=environment)
            exit_code = 1
            if isinstance(e, MachineLost):
                # a machine of the job was lost mid-run (its actor died or restarted): Slurm's NODE_FAIL, requeued
                # as the spec allows, not the job's own failure. The fleet marks the lost machines' IPUs failed
                # first (ending the job NODE_FAIL itself), so the requeued job is not placed on them again.
                log.error("job %s: a machine was lost during training: %s", job_id, record.error)
                state = JobState.NODE_FAIL
                self.rt.fleet.check()
            else:
                log.exception("job %s: training failed", job_id)
        self.rt.store.commit([("job_result", record.name, record)], [])
        self.results[job_id] = record
        with self.rt.lock:
            if self._still_running(job_id, started):
                now = self.rt.now()
                self.rt.dispatcher.apply(self.rt.scheduler.job_finished(job_id, now, state, exit_code=exit_code), now)
        self.progress.pop(job_id, None)
        self.environments.pop(job_id, None)
        self.rt.dispatcher.wake()

    def result(self, job_id: int) -> JobResult | None:
        if job_id not in self.results:
            stored = self.rt.store.get("job_result", str(job_id), JobResult)
            if stored is not None:
                self.results[job_id] = stored
        return self.results.get(job_id)

    def log_lines(self, job_id: int) -> list[str]:
        """`vipu logs ID`: the job's poprun environment (shared variables, then each instance's own and the replicas
        it ran), one line per step so far, then the summary once the run has ended."""
        record = self.result(job_id)
        steps = record.result.reports if record and record.result else self.progress.get(job_id, [])
        environment = record.environment if record else self.environments.get(job_id, [])
        runs = record.result.instances if record and record.result else []
        lines = summary_lines(environment, [f"-> ran replicas {_span(run.replicas)} on IPUs {_span(run.ipus)}"
                                            for run in runs])
        lines += [f"step {r.step:>4}  loss {r.loss:.6f}  emulated step {r.emulated_step_s * 1e6:,.1f} us"
                 f"  (compute {r.compute_s * 1e6:,.1f} us, comm {r.comm_s * 1e6:,.1f} us, bubble"
                 f" {r.bubble_fraction:.1%})  wall {r.wall_s * 1e3:,.1f} ms" for r in steps]
        if record and record.error:
            lines.append(f"training failed: {record.error}")
        elif record and record.result:
            x = record.result
            lines += [
                f"{x.model} on {x.ipus} IPUs of {x.pod} ({x.layout}), {x.optimizer}, global batch {x.global_batch}:"
                f" {x.steps_run} of {x.steps_requested} steps{' (stopped early)' if x.stopped else ''}",
                f"emulated step time {x.emulated_step_s * 1e6:,.1f} us -> {x.throughput_samples_per_s:,.0f} samples/s"
                f" on the real Pod; the planner predicted {x.predicted_step_s * 1e6:,.1f} us"
                f" ({x.predicted_throughput_samples_per_s:,.0f} samples/s)",
                "link traffic: " + ", ".join(f"{k} {v:,} bytes" for k, v in sorted(x.bytes_per_link_type.items())),
                f"host wall-clock: {x.wall_s:.2f} s",
            ]
        return lines


def _span(values: list[int]) -> str:
    """0-3 for a contiguous run, else the values."""
    if values and values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])
    return ",".join(map(str, values))
