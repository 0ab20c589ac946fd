"""The planner: memory and predicted step time of a training workload on a Pod, as one Plan.

plan() is a pure function of (workload, pod, assumptions): `vipu plan SPEC` prints its table(), submit calls
check_fits() (suggest.py) on it, a training job reports it as its prediction (train/runner.py), all three with the
same default assumptions (assumptions.DEFAULT), and the benchmark compares its throughput across Pods.
Plan.model_dump() is its JSON form.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from vipu.hardware.pod import PodConfig
from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.layout import Layout, stage_name
from vipu.jobs.memory_estimate import Memory, memory
from vipu.jobs.timing import StepTime, step_time, training_flops_per_sample
from vipu.jobs.units import size
from vipu.jobs.workload_text import model_text


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
    throughput: float  # samples per second (sequences, when a sample is a pack of them)
    sequences_per_sample: float = 1.0  # a packed sample's sequences (TransformerModel.sequences_per_pack)
    achieved_flops_per_ipu: float
    assumptions: list[str]

    @computed_field
    @property
    def fits(self) -> bool:
        return self.memory.fits

    def problems(self) -> list[str]:
        """Why the workload does not fit, each with the numbers that show it (empty when it fits)."""
        mem, p = self.memory, self.layout.p
        out = []
        if not mem.fits_evenly:
            stage = f" ({stage_name(mem.sram_stage, p)}, the one needing most)" if p > 1 else ""
            out.append(
                f"needs {size(mem.total)} per IPU{stage}, SRAM holds {size(mem.sram_bytes)} (per tile"
                f" {kib(mem.per_tile)} of {kib(mem.sram_per_tile_bytes)}: weights {size(mem.weights)}, gradients"
                f" {size(mem.gradients)}, optimiser {size(mem.optimizer)}, activations {size(mem.activations)},"
                f" reserve {size(mem.reserved)})")
        elif not mem.tiles.fits:
            tiles = mem.tiles
            out.append(
                f"the fullest tile needs {kib(tiles.peak)} at the peak, a tile holds {kib(tiles.tile_bytes)}"
                f" (always-live {kib(tiles.always_live)}, not-always-live {kib(tiles.not_always_live)} of which"
                f" matmul temporaries {kib(tiles.temporaries)}, code and exchange {kib(tiles.reserve)};"
                f" {even_split_text(mem)}); lower workload.layout.available_memory_proportion, use fewer io_tiles,"
                " recompute, or shard over more IPUs")
        if not mem.fits_streaming:
            stage = f" ({stage_name(mem.streaming_stage, p)})" if p > 1 else ""
            out.append(f"needs {size(mem.streaming)} of Streaming Memory per IPU{stage}, its machine has"
                       f" {size(mem.streaming_capacity)} per IPU (weights {size(mem.streaming_weights)}, gradients"
                       f" {size(mem.streaming_gradients)}, optimiser {size(mem.streaming_optimizer)}, stashed"
                       f" block inputs {size(mem.streaming_stash)})")
        return out

    def table(self, suggestions: list[Plan] | None = None) -> str:
        from vipu.jobs.plan_report import render

        return render(self, suggestions)


def plan(workload, pod: PodConfig, assumptions: Assumptions = DEFAULT, mem: Memory | None = None) -> Plan:
    """Memory and step time of `workload` (a TrainWorkload) on `pod`, using its layout's t x p x r IPUs; `mem`, its
    memory(), when the caller has it (the search for a layout that fits times only the ones that do)."""
    mem = memory(workload, pod, assumptions) if mem is None else mem
    time = step_time(workload, pod, assumptions)
    lay = workload.layout
    step = time.total_s
    flops = lay.global_batch * training_flops_per_sample(workload)
    return Plan(
        pod=pod.name, ipus=lay.ipus, model=model_text(workload.model), params=workload.model.params(),
        layout=lay, optimizer=workload.optimizer, global_batch=lay.global_batch, memory=mem, time=time,
        step_s=step, throughput=lay.global_batch * workload.model.sequences_per_sample / step,
        sequences_per_sample=workload.model.sequences_per_sample,
        achieved_flops_per_ipu=flops / step / lay.ipus,
        assumptions=assumptions.lines(),
    )


def kib(nbytes: float) -> str:
    return f"{nbytes / 1024:,.0f} KiB"


def even_split_text(mem: Memory) -> str:
    """The fullest tile against the even split, which counts no matmul temporaries (walk33: "evenly split it would be
    592 KiB" beside 673 read as an imbalance; the 81 KiB between were the temporaries): what makes up the gap."""
    tiles = mem.tiles
    mapping = tiles.peak - tiles.temporaries - mem.per_tile
    uneven = f", the tensors' mapping {kib(mapping)} more" if mapping >= 1024 else ""
    return (f"evenly split, without matmul temporaries: {kib(mem.per_tile)} a tile; the temporaries add"
            f" {kib(tiles.temporaries)} to every tile{uneven}")
