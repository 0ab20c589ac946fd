"""Memory per IPU (and per tile) of a training layout: weights, gradients, optimiser state, activations, reserve.

What lives where, per IPU (n = params / (t p): pipeline stages are balanced, assumptions.py):
- weights n x value bytes, gradient accumulators n x value bytes (the weights' dtype, Graphcore's 16.16 setting);
- optimiser state n x (4 bytes of fp32 momentum for sgd, 8 of fp32 first and second moments for adam, + 4 of fp32
  master weights when an fp16 model keeps them), divided by r with replicated tensor sharding (RTS);
- activations of the micro-batches in flight (1F1B: up to p at stage 0; GPipe: all m), 1/p of the model's each:
  without recomputation everything the backward pass needs; with it only each layer's input, plus one layer's
  full activations while it is recomputed;
- the reserve for code and exchange buffers (assumptions.py).
offload_optimizer moves the optimiser state to Streaming Memory. Phased execution keeps in SRAM only one phase
(an attention, feed-forward or embedding block, split t ways; the one needing most) with its gradient
accumulators and its activations for one micro-batch; weights, accumulators, optimiser state and every
micro-batch's stashed layer inputs (split t ways across the tensor group; a block's input inside a layer is
recomputed from them) live in Streaming Memory, which each machine shares among its IPUs. With RTS there, each
IPU stores only its replica's 1/r of the weights and accumulators (hardware.md: 1/(t p rts) of the model; the
replicas all-gather a phase's weights into SRAM before it runs and reduce-scatter its gradients, timing.py), so
its SRAM still holds the whole phase. Optimiser offload leaves the weights whole in SRAM: RTS shards its state only.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from vipu.jobs.assumptions import Assumptions
from vipu.partition.pod import PodConfig

STATE_BYTES = {"sgd": 4, "adam": 8}
MASTER_BYTES = 4


class Memory(BaseModel):
    """Bytes per IPU; `streaming` is what must live in Streaming Memory for each IPU."""

    model_config = ConfigDict(frozen=True)

    weights: float
    gradients: float
    optimizer: float
    activations: float
    activations_no_recompute: float
    activations_recompute: float
    reserved: float
    total: float
    per_tile: float
    sram_bytes: int
    sram_per_tile_bytes: int
    streaming: float
    streaming_capacity: float

    @computed_field
    @property
    def fits_sram(self) -> bool:
        return self.total <= self.sram_bytes

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
    """Optimiser state per IPU, wherever it lives."""
    lay = workload.layout
    share = workload.model.params() / (lay.t * lay.p)
    return share * state_bytes_per_param(workload) / (lay.r if lay.rts else 1)


def stored_weight_bytes(workload) -> float:
    """Weights per IPU as stored between uses: 1/(t p) of the model, or 1/(t p r) where RTS shards them
    (Layout.shards_weights). Its gradient accumulators are stored in the same share."""
    lay = workload.layout
    share = workload.model.params() / (lay.t * lay.p) * workload.model.value_bytes
    return share / lay.r if lay.shards_weights else share


def stash_bytes(workload) -> float:
    """Phased execution: every micro-batch's layer inputs for a stage, split across the tensor group."""
    lay = workload.layout
    return lay.micro_batches * workload.model.checkpoint_bytes(lay.micro_batch) / lay.p / lay.t


def memory(workload, pod: PodConfig, assumptions: Assumptions) -> Memory:
    model, lay = workload.model, workload.layout
    b, t, p = lay.micro_batch, lay.t, lay.p
    share = model.params() / (t * p)
    value = model.value_bytes
    state = optimizer_bytes(workload)
    no_recompute = lay.in_flight * model.activation_bytes(b, t) / p
    recompute = lay.in_flight * model.checkpoint_bytes(b) / p + model.layer_activation_bytes(b, t)
    if lay.phased:
        params, activations = max(model.phases(b, t), key=lambda ph: 2 * ph[0] / t * value + ph[1])
        weights = gradients = params / t * value
        optimizer = 0.0
        streaming = 2 * stored_weight_bytes(workload) + state + stash_bytes(workload)
    else:
        weights = gradients = share * value
        optimizer = 0.0 if lay.offload_optimizer else state
        activations = recompute if lay.recompute else no_recompute
        streaming = state if lay.offload_optimizer else 0.0
    reserved = assumptions.reserved_sram_fraction * pod.ipu.sram_bytes
    total = weights + gradients + optimizer + activations + reserved
    return Memory(
        weights=weights, gradients=gradients, optimizer=optimizer, activations=activations,
        activations_no_recompute=no_recompute, activations_recompute=recompute, reserved=reserved, total=total,
        per_tile=total / pod.ipu.tiles, sram_bytes=pod.ipu.sram_bytes, sram_per_tile_bytes=pod.ipu.sram_per_tile_bytes,
        streaming=streaming, streaming_capacity=pod.machine.streaming_memory_bytes / pod.machine.ipus,
    )
