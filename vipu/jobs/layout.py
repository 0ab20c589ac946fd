"""How a training job is laid out on its partition: Graphcore's t x p x r, micro-batching and memory options.

The layout is checked in two places, for the reason the job spec gives (a spec file is portable between Pods):
its own shape here (positive counts, powers of two, options that make sense together), against its model in
train_spec.py (t divides the heads, p no more than the layers), and against the partition at submit or plan time
(t x p x r = the partition's IPUs, a size the Pod can give: check_partition).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from pydantic import Field, PositiveInt, model_validator

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.jobs.models import Strict
from vipu.partition.rules import check_size, is_power_of_two


class Layout(Strict):
    t: PositiveInt = Field(1, le=1024, description="tensor shards per layer (Megatron-style)")
    p: PositiveInt = Field(1, le=1024, description="pipeline stages")
    r: PositiveInt = Field(1, le=1 << 16, description="data-parallel replicas")
    micro_batch: PositiveInt = Field(1, le=1 << 20, description="samples per micro-batch")
    micro_batches: PositiveInt = Field(1, le=1 << 20, description="m: micro-batches per step (gradient accumulation)")
    device_iterations: PositiveInt = Field(1, le=1 << 20, description="steps per host call")
    schedule: Literal["1f1b", "gpipe"] = Field(
        "1f1b", description=("1f1b keeps up to p micro-batches in flight per stage; gpipe keeps all m. Phased"
                             " execution is batch-serialised: it runs gpipe whatever this says (Layout.order)"))
    recompute: bool = Field(False, description="keep only each layer's input; recompute the rest in backward")
    rts: bool = Field(False, description=(
        "replicated tensor sharding: optimiser state split across the r replicas; with phased execution also the"
        " weights and gradient accumulators in Streaming Memory (the replicas all-gather a phase's weights before"
        " it runs and reduce-scatter its gradients)"))
    offload_optimizer: bool = Field(False, description="optimiser state in Streaming Memory, streamed each step")
    layers_per_stage: tuple[int, ...] | None = Field(None, max_length=1024, description=(
        "layers of each pipeline stage, first to last (Graphcore's layers_per_ipu, e.g. [3, 7, 7, 7] for"
        " BERT-Large: the first stage also holds the embedding and its tied head); p entries adding up to the"
        " model's layers; default an even split, the embedding weighed as layers. Timing only: memory is counted"
        " on the default split"))
    gradient_reduction: Literal["fused", "per_tensor", "buffered"] = Field("fused", description=(
        "how the replicas allreduce gradients: fused, one allreduce of each stage's gradients (what the emulator"
        " runs); per_tensor, one per parameter tensor (PopART's default); buffered, allreduces of at most"
        " gradient_buffer_bytes (TensorFlow 1's maximum_cross_replica_sum_buffer_size)"))
    gradient_buffer_bytes: PositiveInt = Field(52_428_800, le=1 << 40, description=(
        "with buffered gradient_reduction, the most bytes one allreduce carries (Graphcore's ResNet-50 configs:"
        " 52428800)"))
    phased: bool = Field(False, description=(
        "phased execution: weights live in Streaming Memory, one phase in SRAM; batch-serialised (each phase runs"
        " all m micro-batches while resident, their inputs stashed in Streaming Memory), so in gpipe order"))

    @model_validator(mode="after")
    def _coherent(self) -> Layout:
        for name in ("t", "p", "r"):
            value = getattr(self, name)
            if not is_power_of_two(value):
                below = 1 << (value.bit_length() - 1)
                raise ValueError(f"{name} is {value}, not a power of two (partitions and rings are powers of two);"
                                 f" use {below} or {below * 2}")
        if self.rts and self.r == 1:
            raise ValueError("rts is true but r is 1: replicated tensor sharding splits state across replicas;"
                             " set rts: false or use r >= 2")
        if self.layers_per_stage is not None and (len(self.layers_per_stage) != self.p
                                                   or min(self.layers_per_stage) < 0):
            raise ValueError(f"layers_per_stage has {len(self.layers_per_stage)} entries but p is {self.p}: give"
                             " one count (0 or more) per pipeline stage")
        if self.phased and self.offload_optimizer:
            raise ValueError("phased and offload_optimizer are both true: phased execution already keeps the"
                             " optimiser state in Streaming Memory; drop offload_optimizer")
        return self

    def gradient_collectives(self, tensors: int, nbytes: float) -> int:
        """Allreduces that carry `nbytes` of a stage's gradients held in `tensors` tensors."""
        if self.gradient_reduction == "per_tensor":
            return tensors
        if self.gradient_reduction == "fused":
            return 1
        return max(1, math.ceil(nbytes / self.gradient_buffer_bytes))

    def gradient_description(self) -> str:
        if self.gradient_reduction == "buffered":
            return f"in allreduces of at most {self.gradient_buffer_bytes / 2**20:g} MiB each"
        return "per tensor" if self.gradient_reduction == "per_tensor" else "fused into one allreduce per stage"

    @property
    def ipus(self) -> int:
        return self.t * self.p * self.r

    @property
    def shards_weights(self) -> bool:
        """RTS shards the weights (and gradient accumulators) too where they live in Streaming Memory between uses:
        phased execution. Otherwise (optimiser offload included) the weights stay whole in SRAM, where every
        micro-batch uses them, and RTS shards the optimiser state only."""
        return self.rts and self.phased

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.micro_batches * self.r

    @property
    def bubble_fraction(self) -> Fraction:
        return bubble_fraction(self.p, self.micro_batches)

    @property
    def order(self) -> Literal["1f1b", "gpipe"]:
        """The schedule the stages run: the layout's, but gpipe when phased. Phased execution is batch-serialised
        (Graphcore's batch serialisation): a phase's weights are streamed into SRAM once per pass and every one of
        the m micro-batches runs through it while it is resident, so a stage holds all m micro-batches' stashed
        phase inputs, as gpipe does (1f1b would hold fewer only by streaming each phase in once per micro-batch)."""
        return "gpipe" if self.phased else self.schedule

    def in_flight_at(self, stage: int, schedule: str | None = None) -> int:
        """Micro-batches stage `stage` holds at once in `schedule` (by default the one it runs, Layout.order):
        gpipe (and so phased execution) all m; 1f1b p - stage, its warm-up forwards and one."""
        if (schedule or self.order) == "gpipe":
            return self.micro_batches
        return min(self.p - stage, self.micro_batches)

    def describe(self) -> str:
        options = [name for name, on in (("recomputation", self.recompute), ("RTS", self.rts),
                                         ("optimiser offload", self.offload_optimizer),
                                         ("phased execution", self.phased)) if on]
        order = "gpipe, batch-serialised" if self.phased else self.schedule
        text = (f"t={self.t} p={self.p} r={self.r}, micro-batch {self.micro_batch} x {self.micro_batches}"
                f" ({order})")
        return text + (" with " + ", ".join(options) if options else "")


def bubble_fraction(p: int, m: int) -> Fraction:
    """Idle share of a pipeline of p stages running m micro-batches (GPipe and 1F1B alike): (p-1)/(m+p-1)."""
    return Fraction(p - 1, m + p - 1)


def check_partition(layout: Layout, ipus: int, pod: PodConfig, field: str = "workload.layout") -> None:
    """The layout must use exactly the partition's IPUs, and the partition must be one the Pod can give."""
    check_size(ipus, pod, "ipus")
    if layout.ipus != ipus:
        tp = layout.t * layout.p
        fix = (f"set r to {ipus // tp}" if ipus % tp == 0 else
               f"t x p = {tp} does not divide {ipus}: pick t and p whose product does, then r = {ipus} / (t x p)")
        raise InvalidArgument(
            f"{field}: t x p x r is {layout.t} x {layout.p} x {layout.r} = {layout.ipus}, but the job asks for"
            f" {ipus} IPUs; make t x p x r equal ipus ({fix})"
        )
