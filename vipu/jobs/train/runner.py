"""run_training: the entry point for executing a training job, from the server (a RayTransport over the job's
partition machines, and the poprun environments the controller computed for its partition) or from tests and
benchmarks (LocalTransport and a stand-in partition's environments, the defaults).

Deterministic given workload.seed: the weights, the data and every reduction order are fixed, so a rerun gives
the same losses bit for bit on either transport. Interruptible between steps: should_stop() is checked before
each step (a cancel or a time limit), and the result then says stopped. Whatever happens, the tensors the job put
on its IPUs are freed at the end.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from vipu.fabric import Group, LocalTransport
from vipu.hardware.topology import topology_of
from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.parts import PARTS
from vipu.jobs.planner import plan
from vipu.jobs.workload_text import model_text
from vipu.jobs.train.parallel import ParallelTrainer
from vipu.jobs.train.poprun import local_environments, read_instances
from vipu.jobs.train.problem import check_runnable
from vipu.jobs.train.results import InstanceRun, StepReport, TrainingResult, ipu_usage


def local_transport(group: Group) -> LocalTransport:
    return LocalTransport()


def run_training(workload, pod, first_ipu: int = 0, transport_factory: Callable[[Group], object] = local_transport,
                 *, on_step: Callable[[StepReport], None] | None = None,
                 should_stop: Callable[[], bool] | None = None, steps: int | None = None,
                 assumptions: Assumptions = DEFAULT, environments: Sequence[Mapping[str, str]] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> TrainingResult:
    """Train `workload` (a TrainWorkload) for `steps` (default workload.steps) on the partition of
    workload.layout.ipus IPUs of `pod` starting at `first_ipu`, moving data with transport_factory(partition group).

    environments: one per poprun instance (poprun.py), what the controller computed for the job's partition; each
    instance runs the replicas its POPDIST_* variables give it. Default: poprun.local_environments (a stand-in
    partition "local"). An environment that lacks a variable or does not describe this layout raises
    InvalidArgument before any machine is touched.

    The result's prediction is plan(workload, pod, assumptions): with the default assumptions, the plan that
    `vipu plan SPEC` prints for the same workload and Pod (assumptions.DEFAULT).

    on_step(report) is called after every step; should_stop() before every step. Raises InvalidArgument for a
    workload the emulator cannot execute or a partition that is not an aligned block; a machine lost mid-step
    raises the transport's error (vipu.errors.MachineLost on actors)."""
    started = clock()
    check_runnable(workload)  # before any machine is touched
    if environments is None:
        environments = local_environments(workload.layout, pod, first_ipu)
    instances = read_instances(environments, workload.layout)
    topology = topology_of(pod)  # the same every run: what is priced on it is kept (fabric/known_schedules.py)
    group = Group.block(topology, first_ipu, workload.layout.ipus)
    prediction = plan(workload, pod, assumptions)
    wanted = workload.steps if steps is None else steps
    trainer = ParallelTrainer(workload, pod, first_ipu, transport_factory(group),
                              efficiency=assumptions.compute_efficiency,
                              partition_sync_s=assumptions.sync_s(pod, workload.layout.ipus), clock=clock,
                              topology=topology,
                              instances=instances)
    runs = [InstanceRun(index=inst.instance_index, partition=inst.partition, gcd=inst.gcd,
                        replicas=list(inst.replicas), ipus=trainer.instance_ipus(inst)) for inst in trainer.instances]
    reports: list[StepReport] = []
    stopped = False
    try:
        for step in range(wanted):
            if should_stop is not None and should_stop():
                stopped = True
                break
            report = trainer.run_step(step)
            reports.append(report)
            if on_step is not None:
                on_step(report)
        trainer.finish()
    finally:
        trainer.close()
    return _result(workload, pod, first_ipu, wanted, stopped, reports, prediction, clock() - started, runs)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _result(workload, pod, first_ipu, wanted, stopped, reports, prediction, wall_s, runs) -> TrainingResult:
    lay = workload.layout
    step_s = _mean([r.emulated_step_s for r in reports])
    emulated = {label: _mean([getattr(r, field) for r in reports]) for label, field in PARTS}
    links: dict[str, int] = {}
    for r in reports:
        for link, nbytes in r.bytes_per_link_type.items():
            links[link] = links.get(link, 0) + nbytes
    return TrainingResult(
        model=model_text(workload.model), layout=lay.describe(), pod=pod.name, first_ipu=first_ipu,
        ipus=lay.ipus, optimizer=workload.optimizer, global_batch=lay.global_batch, steps_requested=wanted,
        stopped=stopped, losses=[r.loss for r in reports], reports=reports, emulated_step_s=step_s,
        throughput_samples_per_s=lay.global_batch / step_s if step_s else 0.0, predicted_step_s=prediction.step_s,
        predicted_throughput_samples_per_s=prediction.throughput, predicted_parts=dict(prediction.time.parts()),
        emulated_parts=emulated, bytes_per_link_type=links, wall_s=wall_s, instances=runs,
        ipu_usage=ipu_usage(reports, pod.machine.ipus))
