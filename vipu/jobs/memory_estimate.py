"""Memory per IPU (and per tile) of a training layout: weights, gradients, optimiser state, activations, reserve.

Counted stage by stage, block by block (blocks.py: the blocks the emulator runs, so it holds the same bytes), each
stage on its own layers (layers_per_stage where the layout sets it, Graphcore's layers_per_ipu; else the even
split), and reported for the stage that needs most (Memory.sram_stage; the first holds the embedding and head, and
under 1F1B the most micro-batches): the fullest IPU decides the fit. What lives where, per IPU of a stage:
- weights and gradient accumulators: the stage's parameters on the IPU (sharded tensors 1/t, replicated ones
  whole) in the weights' dtype (Graphcore's 16.16 setting);
- optimiser state: as many x (4 bytes of fp32 momentum for sgd, 8 of fp32 first and second moments for adam, + 4
  of fp32 master weights when an fp16 model keeps them); with replicated tensor sharding (RTS) the IPU's replica
  holds its 1/r shard (the largest: rounded up);
- activations of the micro-batches the stage holds at once (Layout.in_flight_at: 1F1B p - s at stage s, GPipe
  and phased execution all m): without recomputation every block's, with it each block's input plus one block's
  while it is recomputed;
- the reserve for code and exchange buffers (assumptions.py).
offload_optimizer moves the optimiser state to Streaming Memory. Phased execution holds in SRAM one block at a time
(an attention or feed-forward block, an MLP pair, the embedding or the head, split t ways: the one needing most)
with its gradient accumulators and its activations for one micro-batch, recomputed from its input; weights,
accumulators, optimiser state and the inputs of every block (each phase's input, blocks.py) for all m
micro-batches live in Streaming Memory, which each machine shares among its IPUs: phased execution is
batch-serialised (every micro-batch passes through a phase while its weights are resident, so the weights are
streamed four times a step, timing.py), so a stage holds every micro-batch's phase inputs at once (Layout.order:
gpipe), as many bytes as a step writes to the stash and reads back. The tensor group's IPUs hold identical block
inputs, so they stash one copy, 1/t each. With RTS there, each IPU stores only its replica's shard of the weights and
accumulators (hardware.md: 1/(t p rts) of the model; the replicas all-gather a phase's weights into SRAM before it
runs and reduce-scatter its gradients, timing.py), so its SRAM still holds the whole phase. Optimiser offload
leaves the weights whole in SRAM: RTS shards its state only.

Whether it fits SRAM is decided tile by tile (tile_memory.py: the stage's tensors mapped onto the compute tiles,
I/O tiles excluded, with the matmul temporaries and the code and exchange reserve; the fullest tile decides);
Memory.fits_evenly is the even split, which is necessary but not sufficient.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, computed_field, field_serializer

from vipu.hardware.pod import PodConfig
from vipu.jobs.assumptions import Assumptions
from vipu.jobs.blocks import Cost, layout_stage_costs, layout_stage_layers
from vipu.jobs.layout import stage_name
from vipu.jobs.tile_memory import TileMemory, TileTensor, report, stage_tensors, tile_memory

STATE_BYTES = {"sgd": 4, "adam": 8}
MASTER_BYTES = 4


class _Parts(BaseModel):
    """Bytes per IPU, part by part: in SRAM (the reserve aside) and in Streaming Memory."""

    model_config = ConfigDict(frozen=True)

    weights: float
    gradients: float
    optimizer: float
    activations: float
    activations_no_recompute: float
    activations_recompute: float
    streaming_weights: float = 0.0
    streaming_gradients: float = 0.0
    streaming_optimizer: float = 0.0
    streaming_stash: float = 0.0  # phased: the block inputs of all m micro-batches (batch serialisation)

    @field_serializer("weights", "gradients", "optimizer", "activations", "activations_no_recompute",
                      "activations_recompute", "streaming_weights", "streaming_gradients", "streaming_optimizer",
                      "streaming_stash", "reserved", "total", "per_tile", "streaming", "streaming_capacity",
                      "streaming_mean", when_used="json", check_fields=False)
    def _whole_bytes(self, nbytes: float) -> int:
        """Byte counts in JSON (`vipu plan --json`) as integers, rounded up: what is needed is whole bytes."""
        return math.ceil(nbytes)


class StageMemory(_Parts):
    """One pipeline stage's IPUs."""

    stage: int

    @property
    def sram(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    @property
    def streaming(self) -> float:
        return self.streaming_weights + self.streaming_gradients + self.streaming_optimizer + self.streaming_stash


class Memory(_Parts):
    """The SRAM parts of the stage needing most SRAM (sram_stage); `streaming` is what must live in Streaming
    Memory for each IPU of the stage needing most of it (streaming_stage), with its parts."""

    reserved: float
    total: float
    per_tile: float
    sram_bytes: int
    sram_per_tile_bytes: int
    streaming: float
    streaming_capacity: float
    sram_stage: int = 0
    streaming_stage: int = 0
    streaming_mean: float = 0.0  # over the pipeline stages
    tiles: TileMemory  # the fullest tile of the stage needing most (tile_memory.py)

    @property
    def fits_evenly(self) -> bool:
        """Whether the IPU's bytes, split evenly over its compute tiles, fit: necessary, not sufficient."""
        return self.total <= self.sram_bytes

    @computed_field
    @property
    def fits_sram(self) -> bool:
        return self.fits_evenly and self.tiles.fits

    @computed_field
    @property
    def fits_streaming(self) -> bool:
        return self.streaming <= self.streaming_capacity

    @computed_field
    @property
    def fits(self) -> bool:
        return self.fits_sram and self.fits_streaming


def state_bytes_per_param(workload) -> int:
    master = MASTER_BYTES if workload.model.dtype == "fp16" and workload.master_weights else 0
    return STATE_BYTES[workload.optimizer] + master


def optimizer_bytes(workload) -> float:
    """Optimiser state per IPU, wherever it lives, stages balanced (what timing.py streams)."""
    lay = workload.layout
    share = workload.model.params() / (lay.tp * lay.p)
    return share * state_bytes_per_param(workload) / (lay.r if lay.rts else 1)


def stored_weight_bytes(workload) -> float:
    """Weights per IPU as stored between uses, stages balanced: 1/(t p) of the model, or 1/(t p r) where RTS
    shards them (Layout.shards_weights). Its gradient accumulators are stored in the same share."""
    lay = workload.layout
    share = workload.model.params() / (lay.tp * lay.p) * workload.model.value_bytes
    return share / lay.r if lay.shards_weights else share


def stash_bytes(workload) -> float:
    """Phased execution: every micro-batch's block inputs of a stage (averaged over the stages), split across the
    tensor group: what a step writes to Streaming Memory and reads back (timing.py); batch-serialised, a stage
    holds them all at once (stage_memory's streaming_stash)."""
    model, lay = workload.model, workload.layout
    inputs = sum(c.inputs for s in range(lay.p) for _, c in layout_stage_costs(model, lay, s, phased=True))
    return lay.micro_batches * lay.micro_batch * inputs * model.value_bytes / lay.p / lay.t


def stage_memory(workload, stage: int) -> StageMemory:
    model, lay = workload.model, workload.layout
    t, p, b, value = lay.t, lay.p, lay.micro_batch, model.value_bytes
    costs = [c for _, c in layout_stage_costs(model, lay, stage, lay.phased)]
    plain = [c for _, c in layout_stage_costs(model, lay, stage)]
    params = sum(c.params for c in costs)
    owned = math.ceil(params / lay.r) if lay.rts else params
    state = owned * state_bytes_per_param(workload)
    held = lay.in_flight_at(stage)
    unphased = lay.in_flight_at(stage, lay.schedule)  # the comparison a phased plan prints: the layout unphased
    no_recompute = unphased * b * sum(c.activations for c in plain) * value
    recompute = (unphased * sum(c.inputs for c in plain) + max((c.activations for c in plain), default=0)) * b * value
    if lay.phased:
        resident = max(costs, key=lambda c: 2 * c.params + b * c.activations, default=Cost(0, 0, 0))
        stored = (owned if lay.shards_weights else params) * value
        return StageMemory(
            stage=stage, weights=resident.params * value, gradients=resident.params * value, optimizer=0.0,
            activations=b * resident.activations * value, activations_no_recompute=no_recompute,
            activations_recompute=recompute, streaming_weights=stored, streaming_gradients=stored,
            streaming_optimizer=state, streaming_stash=held * b * sum(c.inputs for c in costs) * value / t)
    offload = lay.offload_optimizer
    return StageMemory(
        stage=stage, weights=params * value, gradients=params * value, optimizer=0.0 if offload else state,
        activations=recompute if lay.recompute else no_recompute, activations_no_recompute=no_recompute,
        activations_recompute=recompute, streaming_optimizer=state if offload else 0.0)


SRAM_PARTS = {"weights", "gradients", "optimizer", "activations", "activations_no_recompute", "activations_recompute"}


def tile_tensors(workload, stage: StageMemory) -> tuple[list[TileTensor], float]:
    """The stage's tensors as tile_memory.py maps them, and the largest block's activations of one micro-batch
    (its matmuls' working set): phased, the resident block's; else every block's."""
    model, lay = workload.model, workload.layout
    value, b = model.value_bytes, lay.micro_batch
    costs = list(layout_stage_costs(model, lay, stage.stage, lay.phased))
    if lay.phased and costs:
        costs = [max(costs, key=lambda bc: 2 * bc[1].params + b * bc[1].activations)]
    held = [(f"{block.kind} {'-'.join(map(str, block.layers))}".strip(), c.params * value, b * c.activations * value)
            for block, c in costs]
    return stage_tensors(stage, held), max((nbytes for _, _, nbytes in held), default=0.0)


def memory(workload, pod: PodConfig, assumptions: Assumptions) -> Memory:
    return _memory(workload, pod, assumptions, [stage_memory(workload, s) for s in range(workload.layout.p)])


def memory_if_fits(workload, pod: PodConfig, assumptions: Assumptions) -> Memory | None:
    """memory(), when it fits; else None, found without mapping the tiles when the stages' bytes alone cannot fit
    evenly or in Streaming Memory (the search for a layout that fits, suggest.py, sizes thousands that do not)."""
    stages = [stage_memory(workload, s) for s in range(workload.layout.p)]
    sram, reserved, capacity = _capacity(workload, pod, assumptions)
    if max(st.sram for st in stages) + reserved > sram or max(st.streaming for st in stages) > capacity:
        return None  # Memory.fits_evenly or .fits_streaming would be false
    found = _memory(workload, pod, assumptions, stages)
    return found if found.fits else None


def _capacity(workload, pod: PodConfig, assumptions: Assumptions) -> tuple[int, float, float]:
    """An IPU's SRAM on its compute tiles, the part of it reserved, and its share of Streaming Memory."""
    sram = (pod.ipu.tiles - workload.layout.io_tiles) * pod.ipu.sram_per_tile_bytes
    return sram, assumptions.reserved_sram_fraction * sram, pod.machine.streaming_memory_bytes / pod.machine.ipus


def _memory(workload, pod: PodConfig, assumptions: Assumptions, stages: list[StageMemory]) -> Memory:
    most = max(stages, key=lambda st: st.sram)  # the first of equals
    streamed = max(stages, key=lambda st: st.streaming)
    compute_tiles = pod.ipu.tiles - workload.layout.io_tiles
    sram, reserved, capacity = _capacity(workload, pod, assumptions)
    total = most.sram + reserved
    tensors, largest = tile_tensors(workload, most)
    return Memory(
        **most.model_dump(include=SRAM_PARTS), **streamed.model_dump(exclude=SRAM_PARTS | {"stage"}),
        tiles=tile_memory(tensors, largest, workload.layout, pod, assumptions.reserved_sram_fraction),
        reserved=reserved, total=total, per_tile=total / compute_tiles, sram_bytes=sram,
        sram_per_tile_bytes=pod.ipu.sram_per_tile_bytes, streaming=streamed.streaming,
        streaming_capacity=capacity, sram_stage=most.stage,
        streaming_stage=streamed.stage, streaming_mean=sum(st.streaming for st in stages) / len(stages),
    )


def tile_report(workload, pod: PodConfig, assumptions: Assumptions) -> list[str]:
    """`vipu plan --memory-report`: the tiles of an IPU of the stage needing most SRAM (tile_memory.report)."""
    mem = memory(workload, pod, assumptions)
    tensors, _ = tile_tensors(workload, stage_memory(workload, mem.sram_stage))
    lay = workload.layout
    if lay.p == 1:
        return report(tensors, mem.tiles)
    layers = layout_stage_layers(workload.model, lay, mem.sram_stage)
    # counted from 1, as the stage is (stage_name) and as layers_per_stage lists them: its first entry is layers
    # 1 to n (walk40: "stage 2 of 4: layers 3-9" counted the stage from 1 and its layers from 0)
    first, last, total = layers.start + 1, layers.stop, workload.model.units
    held = {0: "no layers", 1: f"layer {first} of {total}"}.get(len(layers), f"layers {first}-{last} of {total}")
    if mem.sram_stage == 0 and getattr(workload.model, "vocab", None):
        held += " and the embedding"
    split = "layers_per_stage" if lay.layers_per_stage else "the even split"
    return [f"{stage_name(mem.sram_stage, lay.p)}, the one needing most SRAM: {held} ({split})",
            *report(tensors, mem.tiles)]
