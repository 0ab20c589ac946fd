"""Predicted time of one training step (one optimiser update), split into what it is spent on.

A step runs m micro-batches through p stages. Every pipeline tick a stage computes one micro-batch (1/(t p) of
its FLOPs at the calibrated efficiency), runs its tensor-parallel allreduces, and sends its boundary activations
forward and gradients back; the pipeline takes m + p - 1 ticks, of which p - 1 are the bubble, so the bubble's
share of the pipeline time is exactly (p-1)/(m+p-1). Then the replicas allreduce their stage's gradients, and the
optimiser state (and, phased, the weights) moves to and from Streaming Memory. BSP: none of these overlap.

- compute: m x b x forward FLOPs x (3, or 4 recomputing; phased execution recomputes each phase) / (t p)
  / (peak FLOPS x efficiency);
- tensor parallel: per micro-batch and layer of the stage, Megatron's allreduces of b s h values (2 forward,
  2 backward for a transformer layer, 2 more when the forward pass is recomputed) over the t IPUs;
- pipeline sends: per tick, b x boundary values forward and back, each IPU of a tensor group sending 1/t of them
  (Megatron's scatter-gather), one IPU-Link hop (a GW-Link crossing when a replica spans Pod64s);
- batch-norm statistics (distributed batch norm, ResNet-50): per micro-batch, pass and batch norm, an allreduce of
  its mean and variance over the replicas that pool them;
- syncs: every collective and inter-IPU exchange above starts with a sync across the whole partition
  (assumptions.sync_s: its cost grows with the machines and Pod64s the partition spans);
- data parallel: one allreduce of the stage's gradients (n x value bytes) over the r replicas, t x p IPUs apart,
  per tensor, fused, or buffered into allreduces of at most a set size (assumptions.py); with RTS a
  reduce-scatter and an all-gather instead, the same traffic;
- streaming: bytes to and from Streaming Memory / the IPU's share of its machine's bandwidth, reads and writes in
  parallel (the longer counts). Optimiser offload reads and writes the state once a step. Phased execution (batch
  serialisation: all m micro-batches pass through a phase while it is resident) reads the weights four times
  (forward, recomputation, backward, update), the gradients for the update and the state; writes gradients,
  weights and state; and writes then reads back every micro-batch's stashed layer inputs (a block's input inside
  a layer is recomputed from them: hence the extra weight read).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, computed_field

from vipu.jobs.assumptions import Assumptions
from vipu.jobs.comms import GroupShape, allreduce, send
from vipu.jobs.memory import optimizer_bytes, stash_bytes
from vipu.partition.pod import PodConfig


# (label, field) of each part of a step, in the order reports show them; the emulator's StepReport uses the same
# field names for the parts it measures
PARTS = (("compute", "compute_s"), ("pipeline bubble", "bubble_s"),
         ("tensor-parallel collectives", "tensor_parallel_s"), ("pipeline sends", "pipeline_send_s"),
         ("batch-norm statistics", "batch_norm_s"), ("syncs", "sync_s"),
         ("data-parallel allreduce", "data_parallel_s"), ("streaming memory", "streaming_s"))


class StepTime(BaseModel):
    model_config = ConfigDict(frozen=True)

    compute_s: float
    bubble_s: float
    bubble_fraction: float
    tensor_parallel_s: float
    pipeline_send_s: float
    batch_norm_s: float
    sync_s: float
    data_parallel_s: float
    streaming_s: float
    tick_s: float

    @computed_field
    @property
    def total_s(self) -> float:
        return sum(seconds for _, seconds in self.parts())

    def parts(self) -> list[tuple[str, float]]:
        return [(label, getattr(self, field)) for label, field in PARTS]


def recomputes(layout) -> bool:
    return layout.recompute or layout.phased


def training_flops_per_sample(workload) -> float:
    return workload.model.forward_flops() * (4 if recomputes(workload.layout) else 3)


def step_time(workload, pod: PodConfig, assumptions: Assumptions) -> StepTime:
    model, lay = workload.model, workload.layout
    b, t, p, r, m = lay.micro_batch, lay.t, lay.p, lay.r, lay.micro_batches
    flops = pod.ipu.flops_per_s(model.dtype) * assumptions.compute_efficiency
    compute_tick = b * training_flops_per_sample(workload) / (t * p) / flops

    passes = 3 if recomputes(lay) else 2  # forward (+ recomputed forward) + backward
    tp_count = model.units / p * model.tp_allreduces_per_layer * passes
    tp_tick = allreduce(pod, GroupShape(t), tp_count * model.tp_bytes(b), math.ceil(tp_count),
                        assumptions.ild_collective).total_s

    across = t * p > pod.ild_ipus
    send_tick = 2 * send(pod, model.boundary_bytes(b) / t, across) if p > 1 else 0.0

    norms, norm_bytes = model.norm_allreduces()
    norm_tick = allreduce(pod, GroupShape(model.norm_replicas, t * p), passes * norm_bytes, passes * norms,
                          assumptions.ild_collective).total_s if norms else 0.0

    sync = assumptions.sync_s(pod, t * p * r)
    syncs_per_tick = (math.ceil(tp_count) if t > 1 else 0) + passes * norms + (2 if p > 1 else 0)
    sync_tick = syncs_per_tick * sync
    tick = compute_tick + tp_tick + send_tick + norm_tick + sync_tick

    value = model.value_bytes
    share = model.params() / (t * p)
    tensors = assumptions.gradient_collective_count(math.ceil(model.param_tensors() / p), share * value)
    dp = allreduce(pod, GroupShape(r, t * p), share * value, tensors, assumptions.ild_collective).total_s
    dp_sync = tensors * sync if r > 1 else 0.0

    per_ipu = pod.machine.streaming_memory_bytes_per_s / pod.machine.ipus
    state = optimizer_bytes(workload)
    if lay.phased:
        weights = share * value
        stash = stash_bytes(workload)
        reads = 4 * weights + weights + state + stash  # weights x4, gradients, state, stash
        writes = weights + weights + state + stash  # gradients, weights, state, stash
        streaming = max(reads, writes) / per_ipu
    elif lay.offload_optimizer:
        streaming = state / per_ipu
    else:
        streaming = 0.0

    return StepTime(
        compute_s=m * compute_tick, bubble_s=(p - 1) * tick, bubble_fraction=float(lay.bubble_fraction),
        tensor_parallel_s=m * tp_tick, pipeline_send_s=m * send_tick, batch_norm_s=m * norm_tick,
        sync_s=m * sync_tick + dp_sync, data_parallel_s=dp, streaming_s=streaming,
        tick_s=tick,
    )
