"""The planner: memory and predicted step time of a training workload on a Pod, as one Plan.

plan() is a pure function of (workload, pod, assumptions): `vipu plan SPEC` prints its table(), submit calls
check_fits() (suggest.py) on it, a training job reports it as its prediction (train/runner.py), all three with the
same default assumptions (assumptions.DEFAULT), and the benchmark compares its throughput across Pods.
Plan.model_dump() is its JSON form.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.layout import Layout
from vipu.jobs.memory import Memory, memory
from vipu.jobs.timing import StepTime, step_time, training_flops_per_sample
from vipu.partition.pod import PodConfig


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    pod: str
    ipus: int
    model: str
    params: int
    layout: Layout
    optimizer: str
    global_batch: int
    memory: Memory
    time: StepTime
    step_s: float
    throughput: float  # samples per second
    achieved_flops_per_ipu: float
    assumptions: list[str]

    @computed_field
    @property
    def fits(self) -> bool:
        return self.memory.fits

    def problems(self) -> list[str]:
        """Why the workload does not fit, each with the numbers that show it (empty when it fits)."""
        mem = self.memory
        out = []
        if not mem.fits_sram:
            out.append(
                f"needs {gb(mem.total)} per IPU, SRAM holds {gb(mem.sram_bytes)} (per tile {kib(mem.per_tile)} of"
                f" {kib(mem.sram_per_tile_bytes)}: weights {gb(mem.weights)}, gradients {gb(mem.gradients)},"
                f" optimiser {gb(mem.optimizer)}, activations {gb(mem.activations)}, reserve {gb(mem.reserved)})")
        if not mem.fits_streaming:
            out.append(f"needs {gb(mem.streaming)} of Streaming Memory per IPU, its machine has"
                       f" {gb(mem.streaming_capacity)} per IPU")
        return out

    def table(self, suggestions: list[Plan] | None = None) -> str:
        from vipu.jobs.report import render

        return render(self, suggestions)


def describe_model(model) -> str:
    if model.kind == "mlp":
        return f"mlp {model.layers} layers, {model.inputs}->{model.hidden}->{model.outputs}, {model.dtype}"
    if model.kind == "transformer":
        vocab = f", vocab {model.vocab}" if model.vocab else ""
        return (f"transformer {model.layers} layers, hidden {model.hidden}, {model.heads} heads, sequence"
                f" {model.seq_len}{vocab}, {model.dtype}")
    return f"{model.kind} (224x224 images), {model.dtype}"


def plan(workload, pod: PodConfig, assumptions: Assumptions = DEFAULT) -> Plan:
    """Memory and step time of `workload` (a TrainWorkload) on `pod`, using its layout's t x p x r IPUs."""
    mem = memory(workload, pod, assumptions)
    time = step_time(workload, pod, assumptions)
    lay = workload.layout
    step = time.total_s
    flops = lay.global_batch * training_flops_per_sample(workload)
    return Plan(
        pod=pod.name, ipus=lay.ipus, model=describe_model(workload.model), params=workload.model.params(),
        layout=lay, optimizer=workload.optimizer, global_batch=lay.global_batch, memory=mem, time=time,
        step_s=step, throughput=lay.global_batch / step, achieved_flops_per_ipu=flops / step / lay.ipus,
        assumptions=assumptions.lines(),
    )


def gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.2f} GB"


def kib(nbytes: float) -> str:
    return f"{nbytes / 1024:,.0f} KiB"
