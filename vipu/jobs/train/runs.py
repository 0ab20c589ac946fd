"""The runner of `train` workloads in the live controller: each job trains in a thread of its own on its partition's
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
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from vipu.errors import MachineLost
from vipu.jobs.train import run_log
from vipu.jobs.train.poprun import partition_environments
from vipu.jobs.train.run_history import cause, ending, run_end, span
from vipu.jobs.train.results import ModelledSteps, StepReport, TrainingResult
from vipu.partition.placement import mask_of
from vipu.partition.rules import job_partition_name
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.job_states import JobState
from vipu.scheduler.workload import Ending

if TYPE_CHECKING:
    from vipu.jobs.train.modelled import ModelledRun

log = logging.getLogger("vipu.training")
RETURN_WAIT_S = 60.0  # how long a run waits for an earlier run on its IPUs to return (one step, normally)
SHUTDOWN_WAIT_S = 10.0  # how long a stopping controller waits for its training threads to leave the machines


class JobResult(BaseModel):
    """What the store keeps for a job that trained (kind "job_result", name = job id): its latest run's."""

    name: str
    run: int = 1  # which run of the job this is (a requeued job runs again under the same id)
    result: TrainingResult | None = None
    error: str | None = None  # the training itself failed (the job ended FAILED)
    ended: str | None = None  # the run was ended from outside (machine lost, cancel, time limit, preemption,
    # requeue): how, in the user's words
    environment: list[dict[str, str]] = []  # what each poprun instance of the job saw, in instance order
    earlier_runs: list[str] = []  # how each earlier run of the job ended, oldest first
    steps: list[StepReport] = []  # the steps of a run without a result (it failed, or was ended under it), or so
    # far of a run still going: what it logged is kept either way
    modelled: ModelledSteps | None = None  # a modelled run (execute: false) computed nothing: its steps so far,
    # or in all (as in its result); None for a run that computes

    @property
    def reports(self) -> Sequence[StepReport]:
        """Every step the run logged."""
        if self.result:
            return self.result.step_reports()
        return self.modelled.reports() if self.modelled else self.steps

    def run_data(self) -> dict:
        """The run as `vipu logs --json` gives it: every step it logged, its result without them."""
        data = self.model_dump(mode="json", exclude={"name": True, **_STEPS})
        return {**data, "steps": [r.model_dump(mode="json") for r in self.reports]}

    def summary(self) -> dict:
        """What `vipu show job` shows of the run: everything but its steps (`vipu logs`'s), with the losses of a
        run that has no result."""
        summary = self.model_dump(mode="json", exclude=_STEPS)
        if self.result is None:
            summary["losses"] = [r.loss for r in self.steps]
        return summary


# a record's steps, left out where they are not shown (a modelled run's predicted step among them)
_STEPS = {"result": {"reports": True, "modelled": {"step"}}, "steps": True, "modelled": {"step"}}


@dataclass(eq=False)
class _Run:
    """One run of a job. Its thread reports only into this, so a run that outlives its job's next start (blocked
    on a lost machine until its calls time out) cannot touch the next run's steps or record."""

    job_id: int
    number: int
    started: float
    first_ipu: int
    ipus: int
    environment: list[dict[str, str]]
    earlier: list[str]
    steps: list[StepReport] = field(default_factory=list)
    done: bool = False
    after: list["_Run"] = field(default_factory=list)  # runs on the same IPUs whose threads had not returned
    returned: threading.Event = field(default_factory=threading.Event)  # this run's tensors are freed
    modelled: "ModelledRun | None" = None  # a modelled run: no thread, its steps are predicted (modelled.py)

    @property
    def scope(self) -> str:
        """Its tensors' names on the machines start with this, so they are its own (data_path.Scoped)."""
        return f"job{self.job_id}.run{self.number}/"

    def overlaps(self, other: "_Run") -> bool:
        return self.first_ipu < other.first_ipu + other.ipus and other.first_ipu < self.first_ipu + self.ipus


class TrainRuns:
    """The `train` kind's runner (vipu/control/workloads.py); `ctx` is the RunContext the control plane gives it."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.runs: dict[int, _Run] = {}  # each job's latest run in this controller, running or done
        self.results: dict[int, JobResult] = {}
        self._unreturned: list[_Run] = []  # runs whose threads have not returned (their tensors may be on machines)
        self._unreturned_lock = threading.Lock()
        self._stopping = False

    def shutdown(self) -> None:
        """The controller is stopping, and its training runs with it (they run in its process). Their jobs stay
        RUNNING in the store, as after a kill -9, so the restart ends them (NODE_FAIL, requeued as their spec
        allows) saying why: the machines going away under them now is no hardware failure."""
        with self.ctx.lock:
            self._stopping = True
        # their threads leave the machines before Ray goes: a thread still in a Ray call after Ray's shutdown makes
        # Ray's core worker end the whole process (exit 1 instead of a clean stop)
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        with self._unreturned_lock:
            going = list(self._unreturned)
        for run in going:
            run.returned.wait(max(0.0, deadline - time.monotonic()))

    def progress(self) -> dict[int, Sequence[StepReport]]:
        """Running jobs' steps so far (for logs and metrics); a modelled run's, those whose time has passed."""
        now = self.ctx.now()
        return {job_id: run.modelled.steps(now).reports() if run.modelled else run.steps
                for job_id, run in list(self.runs.items()) if not run.done}

    def environment(self, job_id: int, workload) -> list[dict[str, str]]:
        """The environment of each poprun instance of the job, from its partition slurm_<id> as the controller
        holds it now and the address jobs reach the controller at (the caller holds the controller's lock)."""
        state = self.ctx.pod_state()
        partition = state.get("partition", job_partition_name(job_id))
        host, port = self.ctx.api_address()
        return partition_environments(partition, state, host, port, workload.layout)

    def stop(self, stop: StopJob) -> None:
        """A computed run: nothing to do at once, its thread sees its job is no longer running after its step and
        returns. A modelled run has no thread: its result is recorded now (under the controller's lock)."""
        run = self.runs.get(stop.job_id)
        if run is not None and run.modelled is not None and not run.done:
            self._end_modelled(run, stop.state)

    def start(self, start: StartJob) -> Ending | None:
        """A run starts (under the controller's lock, its partition made); it ends when its thread says so, or, a
        modelled run, at the end returned."""
        job_id, started, first_ipu, workload = start.job_id, start.start_time, start.first_ipu, start.workload
        problem: Exception | None = None
        try:
            environment = self.environment(job_id, workload)
        except Exception as e:  # noqa: BLE001 - the run then fails with the reason instead of training blind
            environment, problem = [], e
        job = self.ctx.job(job_id)
        number = max(1, job.runs_started)
        run = _Run(job_id, number, started, first_ipu, workload.layout.ipus, environment, self._earlier(job, number))
        if workload.modelled:
            if problem is not None:
                raise problem  # the job fails with the reason (the executor's StartFailed)
            # imported with the first modelled run: the planner brings numpy (admission has loaded it already)
            from vipu.jobs.train.modelled import ModelledRun

            run.modelled = ModelledRun.begin(workload, self.ctx.pod, first_ipu, started,
                                             self.ctx.settings.modelled_time_scale)
        # stored now, not only when the run ends: a controller that stops under the run never records its end, and
        # the next controller reads how the earlier runs ended from here (it no longer has their machines' story)
        record = JobResult(name=str(job_id), run=number, environment=environment, earlier_runs=run.earlier,
                           modelled=run.modelled.steps(started) if run.modelled else None)
        self.ctx.store.commit([("job_result", record.name, record)], [])
        self.results[job_id] = record
        if run.modelled:  # nothing to compute, nothing put on the machines: the driver ends it at its end
            run.returned.set()
            self.runs[job_id] = run
            return run.modelled.ending()
        with self._unreturned_lock:
            run.after = [r for r in self._unreturned if r.overlaps(run)]
            self._unreturned.append(run)
        self.runs[job_id] = run
        threading.Thread(target=self._run, args=(run, workload, problem), daemon=True,
                         name=f"vipu-train-{job_id}").start()

    def _end_modelled(self, run: _Run, state: JobState) -> None:
        """Record a modelled run's result: all its steps if it COMPLETED (its end came), else those whose time had
        passed when it was stopped, with what stopped it (the caller holds the lock)."""
        job = self.ctx.job(run.job_id)
        ended = run_end(job, run.number) if job is not None else None
        result = run.modelled.result(self.ctx.now() if ended is None else ended, state is JobState.COMPLETED,
                                     run.environment)
        record = JobResult(name=str(run.job_id), run=run.number, result=result, environment=run.environment,
                           earlier_runs=run.earlier, modelled=result.modelled)
        if state is not JobState.COMPLETED and job is not None:
            record.ended = self._ending(job, run.number, record)
        self.ctx.store.commit([("job_result", record.name, record)], [])
        self.results[run.job_id] = record
        run.done = True

    def _still_running(self, job_id: int, started: float) -> bool:
        return self.ctx.still_running(job_id, started)

    def _transport_factory(self, run: _Run):
        from vipu.jobs.train.data_path import Scoped

        fleet = self.ctx.machines
        # the machines are shared: a run whose job was cancelled or requeued finishes its step before it stops, so
        # wait (a while) until runs on these IPUs have freed their SRAM; their tensors' names are theirs either way
        for earlier in run.after:
            if not earlier.returned.wait(timeout=RETURN_WAIT_S):
                log.warning("job %s: run %s has not returned after %g s; run %s of job %s starts beside it",
                            earlier.job_id, earlier.number, RETURN_WAIT_S, run.number, run.job_id)
        machines = self.ctx.pod_state().topology.machines_of(run.first_ipu, run.ipus)
        if not fleet.enabled:
            # the in-process machines an actor would wrap: tile SRAM and Streaming Memory checked as on actors
            return lambda group: Scoped(fleet.machine_transport(machines), run.scope)
        from vipu.fabric.ray_transport import RayTransport

        pool = fleet.actors_for(machines)
        return lambda group: Scoped(RayTransport.for_group(pool, group, deferred=True), run.scope)

    def _run(self, run: _Run, workload, problem: Exception | None) -> None:
        job_id = run.job_id
        result, failure = None, None
        try:
            try:
                if problem is not None:
                    raise problem  # the poprun environment could not be built: the job fails with that reason
                # imported with the first run: the emulator brings numpy, which a controller that only queues
                # needs never load (a third of its start-up)
                from vipu.jobs.train.runner import run_training

                factory = self._transport_factory(run)
                result = run_training(workload, self.ctx.pod, run.first_ipu, factory,
                                      on_step=run.steps.append,
                                      should_stop=lambda: self._stopping or not self._still_running(job_id,
                                                                                                     run.started),
                                      environments=run.environment)
            finally:  # run_training has freed the run's tensors (or its machines are gone)
                run.returned.set()
                with self._unreturned_lock:
                    self._unreturned.remove(run)
        except Exception as e:  # noqa: BLE001 - a failed run ends the job FAILED with the reason in its logs
            failure = e
            if isinstance(e, MachineLost) and not self._stopping:
                # a machine of the job was lost mid-run (its actor died or restarted): Slurm's NODE_FAIL, requeued
                # as the spec allows, not the job's own failure. The fleet marks the lost machines' IPUs failed
                # first (ending the job NODE_FAIL itself), so the requeued job is not placed on them again.
                log.error("job %s: a machine was lost during training: %s", job_id, e)
                self.ctx.machines.check()
        with self.ctx.lock:  # the record and the job's end in one store transaction (the lock's batch)
            if self._stopping:
                return
            live = self._still_running(job_id, run.started)
            if live and isinstance(failure, MachineLost):  # the health check did not see it: the training's word
                self.ctx.finish(job_id, run.started, 1, JobState.NODE_FAIL)
                live = False
            record = JobResult(name=str(job_id), run=run.number, result=result, environment=run.environment,
                               earlier_runs=run.earlier, steps=[] if result else list(run.steps))
            if failure is not None and live:
                log.error("job %s: training failed", job_id, exc_info=failure)
                record.error = f"{type(failure).__name__}: {getattr(failure, 'message', failure)}"
            elif not live:  # the controller ended the run (a lost machine, a cancel): say that, not what it broke
                if failure is not None:
                    log.info("job %s: run %s ended under its training: %s", job_id, run.number, failure)
                job = self.ctx.job(job_id)
                record.ended = self._ending(job, run.number, record) if job else None
            if self.runs.get(job_id) is run:  # not once a later run of the job has started
                self.ctx.store.commit([("job_result", record.name, record)], [])
                self.results[job_id] = record
                run.done = True
            if live:
                # COMPLETED or FAILED by the exit code
                self.ctx.finish(job_id, run.started, 0 if failure is None else 1, None)
        self.ctx.wake()

    def forget(self, job_id: int) -> None:
        run = self.runs.get(job_id)
        if run is not None and run.done:
            del self.runs[job_id]
        self.results.pop(job_id, None)

    def record(self, job_id: int) -> JobResult | None:
        """The record of the job's latest run that has ended; while a run is going, what is known of it so far
        (its environment, how earlier runs ended and its steps so far)."""
        run = self.runs.get(job_id)
        if run is not None and not run.done:
            return JobResult(name=str(job_id), run=run.number, environment=run.environment, earlier_runs=run.earlier,
                             steps=list(run.steps),
                             modelled=run.modelled.steps(self.ctx.now()) if run.modelled else None)
        if job_id not in self.results:
            stored = self.ctx.store.get("job_result", str(job_id), JobResult)
            if stored is not None:
                self.results[job_id] = stored
        return self.results.get(job_id)

    def log_lines(self, job_id: int) -> list[str]:
        """`vipu logs ID`: how earlier runs ended, the job's poprun environment (shared variables, then each
        instance's own and the replicas it ran), one line per step of the current run so far, then how it ended:
        its summary, its failure, or what ended it (run_log.py)."""
        return run_log.log_lines(self, job_id)

    def log_after(self, job_id: int, mark, partial: bool = False):
        return run_log.log_after(self, job_id, mark)

    # -- how a run ended, in the user's words ----------------------------------------------------------------------
    def _earlier(self, job, number: int) -> list[str]:
        """One line per run of `job` before run `number`: those already recorded, then the ones since."""
        record = self.record(job.id)
        earlier = list(record.earlier_runs) if record else []
        for n in range(len(earlier) + 1, number):
            if record is not None and record.run == n and record.ended:
                earlier.append(record.ended)
            else:
                earlier.append(self._ending(job, n, record if record is not None and record.run == n else None)
                               or f"run {n} ended")
        return earlier

    def _ending(self, job, number: int, record: JobResult | None) -> str | None:
        return ending(job, number, lambda state: self._cause(job, number, state, record))

    def _cause(self, job, number: int, state: JobState, record: JobResult | None) -> str:
        if record is not None and record.error and state is JobState.FAILED:
            return f"training failed: {record.error}"
        if record is not None and record.result and state is JobState.COMPLETED:
            return f"{record.result.steps_run} of {record.result.steps_requested} steps"
        run = self.runs.get(job.id)
        if state is JobState.NODE_FAIL and run is not None and run.number == number:
            lost = self._lost_hardware(run.first_ipu, run.ipus, run_end(job, number))
            if lost:
                return lost
        return cause(job, number, state)

    def _lost_hardware(self, first_ipu: int, ipus: int, until: float | None) -> str | None:
        """The IPUs under a block that had failed when its run ended (`until`), by machine: "machine 1 was lost",
        "IPU 5 of machine 1 failed". Why not the failed IPUs now: a node lost in waves failed more machines after
        the run ended, and its logs named them while `vipu show job` (EndedBy, written at the end) did not."""
        state = self.ctx.pod_state()
        topology = state.topology
        mask = mask_of(f.ipu for f in state.ipu_failures.values()
                       if until is None or f.reason is None or f.reason.at <= until)
        whole, parts = [], []
        for machine in topology.machines_of(first_ipu, ipus):
            own = [i for i in topology.machine_ipus(machine) if first_ipu <= i < first_ipu + ipus]
            failed = [i for i in own if mask >> i & 1]
            if failed and len(failed) == len(topology.machine_ipus(machine)):
                whole.append(machine)
            elif failed:
                parts.append(f"IPU{'s' if len(failed) > 1 else ''} {span(failed)} of machine {machine} failed")
        said = [f"machine {whole[0]} was lost" if len(whole) == 1 else
                f"machines {', '.join(map(str, whole))} were lost"] if whole else []
        return ", ".join(said + parts) or None
