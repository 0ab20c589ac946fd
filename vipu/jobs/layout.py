"""How a training job is laid out on its partition: Graphcore's t x p x r, micro-batching and memory options.

The layout is checked in two places, for the reason the job spec gives (a spec file is portable between Pods):
its own shape here (positive counts, powers of two, options that make sense together), against its model in
train_spec.py (t divides the heads, p no more than the layers), and against the partition at submit or plan time
(t x t2 x p x r = the partition's IPUs, a size the Pod can give, I/O tiles fewer than its tiles: check_partition).

Two-dimensional tensor parallelism (t2 > 1) is PopXL's GPT-3 layout (graphcore/examples
nlp/gpt3_175B/popxl/config/pretraining.yml, gpt3_175B_pod256: data_parallel 4, tensor_parallel_1 8,
tensor_parallel_2 8, io_tiles 128, available_memory_proportion 0.1; utils/utils.py tp2d_replica_groups): t is
tensor_parallel_1, t2 tensor_parallel_2, the innermost axis, so a stage's t x t2 IPUs are t groups of t2 adjacent
IPUs and the t-groups are t2 IPUs apart (blocks.py says what each IPU then holds).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from pydantic import Field, model_validator

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.jobs.models import Strict
from vipu.jobs.workload_text import layout_text
from vipu.partition.rules import check_size, is_power_of_two, too_many_fix
from vipu.spec_numbers import Count, Number, Whole


class Layout(Strict):
    t: Count = Field(1, le=1024, description=(
        "tensor shards per layer (Megatron-style); with t2 > 1 the first of two tensor-parallel axes (PopXL's"
        " tensor_parallel_1)"))
    t2: Count = Field(1, le=1024, description=(
        "second tensor-parallel axis (PopXL's tensor_parallel_2, innermost: t2 adjacent IPUs): each weight matrix"
        " split t x t2 ways, the hidden dimension of activations t2 ways; transformer models only"))
    p: Count = Field(1, le=1024, description="pipeline stages")
    r: Count = Field(1, le=1 << 16, description="data-parallel replicas")
    micro_batch: Count = Field(1, le=1 << 20, description="samples per micro-batch")
    micro_batches: Count = Field(1, le=1 << 20, description="m: micro-batches per step (gradient accumulation)")
    device_iterations: Count = Field(1, le=1 << 20, description="steps per host call")
    schedule: Literal["1f1b", "gpipe"] = Field(
        "1f1b", description=("1f1b keeps up to p micro-batches in flight per stage; gpipe keeps all m. Phased"
                             " execution is batch-serialised: it runs gpipe whatever this says (Layout.order)"))
    recompute: bool = Field(False, description=(
        "keep only each layer's input; recompute the rest in backward. Phased execution recomputes whatever this"
        " says (PopXL recomputes every phase's forward in its backward, stashing only the phase's input)"))
    rts: bool = Field(False, description=(
        "replicated tensor sharding: optimiser state split across the r replicas; with phased execution also the"
        " weights and gradient accumulators in Streaming Memory (the replicas all-gather a phase's weights before"
        " it runs and reduce-scatter its gradients)"))
    offload_optimizer: bool = Field(False, description="optimiser state in Streaming Memory, streamed each step")
    io_tiles: Whole = Field(0, ge=0, le=1 << 16, description=(
        "tiles per IPU kept for streaming data in and out (PopXL's io_tiles): they hold no tensors and compute"
        " nothing, so the model has the other tiles' SRAM and FLOPs"))
    available_memory_proportion: Number = Field(0.6, gt=0, le=1, description=(
        "the share of each tile's SRAM a matmul may use for its temporaries (Poplar's availableMemoryProportion,"
        " default 0.6): a compiler plans the largest matmul to fit it"))
    layers_per_stage: tuple[Whole, ...] | None = Field(None, max_length=1024, description=(
        "layers of each pipeline stage, first to last (Graphcore's layers_per_ipu, e.g. [3, 7, 7, 7] for"
        " BERT-Large: the first stage also holds the embedding and its tied head); p entries adding up to the"
        " model's layers; default an even split, the embedding weighed as layers. Memory is counted on these"
        " stages (the fullest IPU decides the fit); a transformer's stage time too, other models' stages are"
        " timed as balanced"))
    gradient_reduction: Literal["fused", "per_tensor", "buffered"] = Field("fused", description=(
        "how the replicas allreduce gradients: fused, one allreduce of each stage's gradients (what the emulator"
        " runs); per_tensor, one per parameter tensor (PopART's default); buffered, allreduces of at most"
        " gradient_buffer_bytes (TensorFlow 1's maximum_cross_replica_sum_buffer_size)"))
    gradient_buffer_bytes: Count = Field(52_428_800, le=1 << 40, description=(
        "with buffered gradient_reduction, the most bytes one allreduce carries (Graphcore's ResNet-50 configs:"
        " 52428800)"))
    phased: bool = Field(False, description=(
        "phased execution: weights live in Streaming Memory, one phase in SRAM; batch-serialised (each phase runs"
        " all m micro-batches while resident, their inputs stashed in Streaming Memory), so in gpipe order;"
        " each phase's backward recomputes its forward from that input, so phased implies recompute"))

    @model_validator(mode="after")
    def _coherent(self) -> Layout:
        for name in ("t", "t2", "p", "r"):
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
    def tp(self) -> int:
        """A stage's tensor-parallel IPUs: t x t2."""
        return self.t * self.t2

    @property
    def ipus(self) -> int:
        return self.tp * self.p * self.r

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
        return layout_text(self)


def compute_share(layout: Layout, pod: PodConfig) -> float:
    """The share of an IPU's tiles (and so of its FLOPs) left to the model once its I/O tiles are set aside."""
    return (pod.ipu.tiles - layout.io_tiles) / pod.ipu.tiles


def stage_name(stage: int, p: int) -> str:
    """A pipeline stage as a person reads it: counted from 1 ("pipeline stage 1 of 4" is the first). Code and
    `vipu plan --json` (memory.sram_stage, memory.streaming_stage) index stages from 0."""
    return f"pipeline stage {stage + 1} of {p}"


def bubble_fraction(p: int, m: int) -> Fraction:
    """Idle share of a pipeline of p stages running m micro-batches (GPipe and 1F1B alike): (p-1)/(m+p-1)."""
    return Fraction(p - 1, m + p - 1)


def fewer_ipus(layout: Layout, limit: int, field: str = "workload.layout") -> str:
    """How to ask for at most `limit` IPUs with this layout: fewer replicas, or fewer IPUs a replica."""
    replica = layout.tp * layout.p
    return (f"use fewer replicas (ipus {limit} and {field}.r {limit // replica})" if replica <= limit else
            f"use fewer IPUs a replica ({field}: t x p is {replica})")


def check_partition(layout: Layout, ipus: int, pod: PodConfig, field: str = "workload.layout") -> None:
    """The layout must use exactly the partition's IPUs, the partition must be one the Pod can give, and the I/O
    tiles must leave tiles to compute on."""
    fewer = fewer_ipus(layout, pod.max_partition_ipus, field)
    check_size(ipus, pod, "ipus", too_many_fix(ipus, fewer, ": the spec's pod, or `vipu plan --pod`"))
    if layout.ipus != ipus:
        tp = layout.tp * layout.p
        two = layout.t2 > 1
        names, values = ("t x t2 x p x r", f"{layout.t} x {layout.t2}") if two else ("t x p x r", f"{layout.t}")
        fix = (f"set r to {ipus // tp}" if ipus % tp == 0 else
               f"{names.removesuffix(' x r')} = {tp} does not divide {ipus}: pick factors whose product does, then"
               f" r = {ipus} / {tp}")
        raise InvalidArgument(
            f"{field}: {names} is {values} x {layout.p} x {layout.r} = {layout.ipus}, but the job asks for"
            f" {ipus} IPUs; make {names} equal ipus ({fix})"
        )
    if layout.io_tiles >= pod.ipu.tiles:
        raise InvalidArgument(
            f"{field}.io_tiles is {layout.io_tiles} but an IPU of {pod.name} has {pod.ipu.tiles} tiles; leave tiles"
            f" to compute on: give at most {pod.ipu.tiles - 1} (PopXL's GPT-3 configs use 128)")
