"""Modelled training runs (a train workload with execute: false): a spec too large to compute here (BERT-Base on a
Pod64, GPT-3 on a Pod256) runs without computing.

Its run holds its partition for steps x the planner's predicted step time x the controller's time scale
(`vipu-server --modelled-time-scale`, default 1: as long as the real Pod would take), and reports the prediction as
a computed run reports its steps: step i is reported once (i + 1) x that scaled step time has passed since the run
started, with the plan's step time and its parts, each IPU's utilisation (its compute / the step), SRAM (its
pipeline stage's weights, gradients, optimiser state and activations, the reserve aside, as a computed step
counts them) and Streaming Memory. It has no loss and moves no bytes: it computes nothing, and says so (None, not a
made-up number). Its steps are all the same prediction, so they are kept once (results.ModelledSteps).

Why the plan is kept here: the run's end is known when it starts, under the controller's lock, and is computed
from the plan. Admission, before the lock, computes it and keeps it for the start (`remember`); a start that finds
none (after a controller restart) computes it then, which takes tens of milliseconds.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping, Sequence

from vipu.hardware.pod import PodConfig
from vipu.jobs.memory_estimate import stage_memory
from vipu.jobs.planner import Plan, plan
from vipu.jobs.workload_text import model_text
from vipu.jobs.train.poprun import read_instances
from vipu.jobs.train.results import InstanceRun, IpuReport, ModelledSteps, StepReport, TrainingResult, ipu_usage
from vipu.scheduler.workload import Ending

MAX_PLANS = 256  # plans kept for runs yet to start (an array's tasks share one)
_plans: OrderedDict[tuple, Plan] = OrderedDict()
_plans_lock = threading.Lock()


def remember(workload, pod: PodConfig, planned: Plan) -> None:
    """Keep the plan admission computed for the run's start (the oldest kept goes first)."""
    with _plans_lock:
        _plans[(workload, pod)] = planned
        _plans.move_to_end((workload, pod))
        while len(_plans) > MAX_PLANS:
            _plans.popitem(last=False)


def predicted(workload, pod: PodConfig) -> Plan:
    """The workload's plan on `pod`: the one admission kept, else computed now (and kept)."""
    with _plans_lock:
        kept = _plans.get((workload, pod))
    if kept is None:
        kept = plan(workload, pod)
        remember(workload, pod, kept)
    return kept


def hold_s(planned: Plan, steps: int, time_scale: float) -> float:
    """How long a modelled run of `steps` holds its partition: steps x the predicted step time x time_scale."""
    return steps * planned.step_s * time_scale


def steps_passed(elapsed_s: float, step_wall_s: float, steps: int) -> int:
    """The steps whose scaled time has passed `elapsed_s` after the run started (at most `steps`). A step whose
    end is due within a float's rounding counts as passed: the run's end is steps x step_wall_s after its start."""
    if step_wall_s <= 0:
        return steps
    return max(0, min(steps, math.floor(elapsed_s / step_wall_s * (1 + 1e-9))))


def ipu_reports(workload, pod: PodConfig, first_ipu: int, planned: Plan) -> dict[int, IpuReport]:
    """Each IPU of the partition in a predicted step. The planner balances FLOPs over the stages, so every IPU
    computes the same; memory is its pipeline stage's (the planner's IPU numbering: shards innermost, then stages,
    then replicas, as the emulator places them)."""
    lay = workload.layout
    own_s = planned.time.compute_s - planned.time.compute_sync_s  # FLOPs at the calibrated rate, syncs aside
    stages = [stage_memory(workload, s) for s in range(lay.p)]
    out = {}
    for offset in range(lay.ipus):
        stage = stages[offset // lay.tp % lay.p]
        out[first_ipu + offset] = IpuReport(
            compute_s=own_s, utilisation=own_s / planned.step_s if planned.step_s else 0.0,
            memory_bytes=math.ceil(stage.sram), activation_bytes=math.ceil(stage.activations),
            streaming_bytes=math.ceil(stage.streaming))
    return out


def predicted_step(workload, pod: PodConfig, first_ipu: int, planned: Plan, time_scale: float) -> StepReport:
    """The step every step of a modelled run reports (numbered 0): the plan's time and parts, and each IPU."""
    t = planned.time
    return StepReport(
        step=0, loss=None, emulated_step_s=planned.step_s, compute_s=t.compute_s,
        comm_s=t.tensor_parallel_s + t.pipeline_send_s + t.data_parallel_s, tensor_parallel_s=t.tensor_parallel_s,
        pipeline_send_s=t.pipeline_send_s, sync_s=t.sync_s, data_parallel_s=t.data_parallel_s, bubble_s=t.bubble_s,
        bubble_fraction=t.bubble_fraction, streaming_s=t.streaming_s, batch_norm_s=t.batch_norm_s,
        host_io_s=t.host_io_s,
        bytes_per_link_type={}, bytes_per_kind={}, collectives=0,
        ipus=ipu_reports(workload, pod, first_ipu, planned), wall_s=planned.step_s * time_scale, modelled=True)


def instance_runs(environments: Sequence[Mapping[str, str]], layout, first_ipu: int) -> list[InstanceRun]:
    """The poprun instances the run's environment gave it, and the IPUs of their replicas (none without one)."""
    if not environments:
        return []
    return [InstanceRun(index=inst.instance_index, partition=inst.partition, gcd=inst.gcd, replicas=list(inst.replicas),
                        ipus=[first_ipu + (rep * layout.p + s) * layout.tp + k for rep in inst.replicas
                              for s in range(layout.p) for k in range(layout.tp)])
            for inst in read_instances(environments, layout)]


def modelled_result(workload, pod: PodConfig, first_ipu: int, planned: Plan, steps: ModelledSteps, wall_s: float,
                    instances: list[InstanceRun]) -> TrainingResult:
    """The result of a modelled run that reported `steps` (fewer than asked: it was stopped)."""
    lay = workload.layout
    ran = steps.steps_run > 0
    return TrainingResult(
        model=model_text(workload.model), layout=lay.describe(), pod=pod.name, first_ipu=first_ipu,
        ipus=lay.ipus, optimizer=workload.optimizer, global_batch=lay.global_batch, steps_requested=workload.steps,
        stopped=steps.steps_run < workload.steps, losses=[], reports=[],
        emulated_step_s=planned.step_s if ran else 0.0, throughput_samples_per_s=planned.throughput if ran else 0.0,
        predicted_step_s=planned.step_s, predicted_throughput_samples_per_s=planned.throughput,
        predicted_parts=dict(planned.time.parts()),
        emulated_parts={label: seconds if ran else 0.0 for label, seconds in planned.time.parts()},
        bytes_per_link_type={}, wall_s=wall_s, instances=instances,
        ipu_usage=ipu_usage([steps.step], pod.machine.ipus) if ran else [], modelled=steps)


@dataclass(frozen=True)
class ModelledRun:
    """One modelled run of a job from its start: when it ends, its steps at any time, and its result."""

    workload: object  # a TrainWorkload with execute: false
    pod: PodConfig
    first_ipu: int
    started: float
    planned: Plan
    step: StepReport  # the predicted step
    time_scale: float

    @classmethod
    def begin(cls, workload, pod: PodConfig, first_ipu: int, started: float, time_scale: float) -> ModelledRun:
        planned = predicted(workload, pod)
        step = predicted_step(workload, pod, first_ipu, planned, time_scale)
        return cls(workload, pod, first_ipu, started, planned, step, time_scale)

    def ending(self) -> Ending:
        """Its end, as the driver watches it: every step's scaled time after its start, exit code 0."""
        return Ending(self.started + hold_s(self.planned, self.workload.steps, self.time_scale), 0)

    def steps(self, at: float, completed: bool = False) -> ModelledSteps:
        """Its steps by `at` (all of them once it has COMPLETED)."""
        passed = self.workload.steps if completed else steps_passed(at - self.started, self.step.wall_s,
                                                                   self.workload.steps)
        return ModelledSteps(time_scale=self.time_scale, step_wall_s=self.step.wall_s, steps_run=passed,
                             step=self.step)

    def result(self, at: float, completed: bool, environments: Sequence[Mapping[str, str]]) -> TrainingResult:
        """Its result when it ended at `at`: COMPLETED (`completed`), or stopped from outside after the steps whose
        time had passed by then."""
        steps = self.steps(at, completed)
        instances = instance_runs(environments, self.workload.layout, self.first_ipu)
        return modelled_result(self.workload, self.pod, self.first_ipu, self.planned, steps,
                               max(0.0, at - self.started), instances)
