"""Predicted time of one training step (one optimiser update), split into what it is spent on.

A step runs m micro-batches through p stages. Every pipeline tick a stage computes one micro-batch (1/(t p) of
its FLOPs at the calibrated efficiency), runs its tensor-parallel allreduces, and sends its boundary activations
forward and gradients back; the pipeline takes m + p - 1 ticks, of which p - 1 are the bubble, so the bubble's
share of the pipeline time is exactly (p-1)/(m+p-1) for balanced stages (bubble_fraction). The bubble is priced as
the busiest stage waits it out: for the micro-batch to cross each other stage once, filling and draining the
pipeline: bubble = the sum of the other stages' ticks. The first and last stages (sending one way only) tick
faster than the middle ones, and stages whose sends take longer routes slower (pipeline sends below). In gpipe
order (and so phased execution, Layout.order) every forward crosses the pipeline before the backwards do, so the
bubble is priced from each stage's forward and backward apart (gpipe_pipeline_s): where one stage's forward is the
slowest and another's backward (the first stage sends forward only, the last back only), GPipe idles longer. Then the
replicas allreduce their stage's gradients, and the optimiser state (and, phased, the weights) moves to and from
Streaming Memory. BSP: none of these overlap.

- compute: m x b x the stage's forward FLOPs x (3, or 4 recomputing; phased execution recomputes each phase) / t
  / (peak FLOPS x the model's class's efficiency: assumptions.efficiency x the share of tiles that are not I/O
  tiles), plus a transformer's attention scores on the vector units (score_s: heads x s^2 a layer and sample at
  assumptions' tile cycles a score, poplibs' figures), plus the on-chip sync that ends each BSP compute set
  (compute_sets). A transformer's stage does its
  layers' FLOPs (layers_per_stage, or the split memory uses), the first stage also the embedding's tied head
  (Graphcore's placement); other models' stages 1/p each. With two tensor axes t is t x t2, and attention runs
  whole on each IPU of a t2 group (tensor_axes.py);
- tensor parallel: per micro-batch and layer of the stage, Megatron's allreduces of b s h values (2 forward,
  2 backward for a transformer layer, 2 more when the forward pass is recomputed) over the t IPUs; with two axes
  (t2 > 1) PopXL's allreduces over each axis and the gathers of a stage's output (tensor_axes.py);
- pipeline sends: per tick, b x boundary values forward and back (a middle stage; the first and last stages send one
  way only), each IPU of a tensor group sending 1/t of them to its counterpart in the next stage (Megatron's
  scatter-gather) over the route the emulator takes (collective_time.stage_sends: the shortest IPU-Link path, one
  hop only where the two IPUs are linked, e.g. 2 for t = 2, p = 2 inside a machine's ring of 4; a GW-Link crossing
  where stages sit in different Pod64s), then an all-gather of the pieces among the receiving stage's t IPUs;
- batch-norm statistics (distributed batch norm, ResNet-50): per micro-batch, pass and batch norm, an allreduce of
  its mean and variance over the replicas that pool them, after a sync of those replicas' IPUs;
- syncs: every other collective and inter-IPU exchange above starts with a sync across the whole partition
  (assumptions.sync_s: its cost grows with the machines and Pod64s the partition spans);
- host I/O: a call from the hosts every device_iterations steps; every micro-batch's inputs go from the hosts to
  the first stage's IPUs after a sync with the hosts (assumptions.host_sync_s), each machine's over its host
  connection, slower the more machines and Pod64s the job spans (assumptions.host_slowdown); BSP, so the whole
  partition waits for the machine with most to receive;
- data parallel: one allreduce of the stage's gradients (n x value bytes) over the r replicas, t x p IPUs apart, per
  tensor, fused, or buffered into allreduces of at most a set size (the layout's gradient_reduction); with RTS a
  reduce-scatter and an all-gather instead, the same traffic. With RTS and phased execution the weights are stored
  sharded too (memory_estimate.py): the gradients are reduce-scattered, each replica updates its shard, and before
  each of the WEIGHT_GATHERS uses of the weights in a step the replicas all-gather them (each with its sync);
- streaming: once a step, each machine moves its IPUs' bytes to and from Streaming Memory as one batch
  (hardware/streaming_cost.py duplex_s, what the emulator's machines charge): one latency, then reads and writes in
  parallel at the machine's bandwidth (the longer counts), shared by the job's IPUs on the machine. Optimiser
  offload reads and writes the state once a step. Phased execution is batch-serialised (all m micro-batches pass
  through a phase while it is resident, the stages running gpipe order: Layout.order), so it reads the weights four
  times (forward, recomputation, backward, update), the gradients for the update and the state; writes gradients,
  weights and state; and writes then reads back every micro-batch's stashed block inputs (each phase's input, from
  which the backward pass recomputes the phase; all m held at once, memory_estimate.py). The pipeline ticks above
  are still one micro-batch through a stage's phases: the phases' order within a stage (one phase for every
  micro-batch, then the next) is not priced, beyond the streaming it saves. With RTS each of those weight and
  gradient transfers is the IPU's 1/r share (memory_estimate.stored_weight_bytes).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, computed_field

from vipu.hardware.pod import PodConfig
from vipu.hardware.streaming_cost import duplex_s
from vipu.jobs.assumptions import Assumptions
from vipu.jobs.blocks import layout_stage_layers
from vipu.jobs.collective_time import GroupShape, all_gather, allreduce, allreduce_half, stage_sends
from vipu.jobs.layout import compute_share
from vipu.jobs.memory_estimate import optimizer_bytes, stash_bytes, stored_weight_bytes
from vipu.jobs.parts import PARTS
from vipu.jobs.tensor_axes import attention_flops_beyond_share, stage_gather_s, tensor_parallel

# phased execution with RTS: the uses of the weights in a step that each all-gather them from the replicas' shards
# (forward, recomputation, backward; the update works on the IPU's own shard), as the streaming below reads them
WEIGHT_GATHERS = 3


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
    host_io_s: float = 0.0
    tick_s: float  # the busiest stage's tick (a middle stage's, when p > 2)
    edge_tick_s: float = 0.0  # the first and last stages' tick: they send one way only
    compute_sync_s: float = 0.0  # of compute_s: the on-chip syncs ending the compute sets (compute_sets)

    @computed_field
    @property
    def total_s(self) -> float:
        return sum(seconds for _, seconds in self.parts())

    def parts(self) -> list[tuple[str, float]]:
        return [(label, getattr(self, field)) for label, field in PARTS]


def recomputes(layout) -> bool:
    """Phased execution recomputes whatever `recompute` says: PopXL's phased GPT-3 recomputes every phase's backward
    (addons.recompute_graph, no option), stashing only the phase's input; the plan's layout line says so."""
    return layout.recompute or layout.phased


def passes_factor(layout) -> int:
    """Training FLOPs per forward FLOP: forward, backward for activations and for weights; one more forward when
    recomputing."""
    return 4 if recomputes(layout) else 3


def training_flops_per_sample(workload) -> float:
    return workload.model.forward_flops() * passes_factor(workload.layout)


def score_s(workload, pod: PodConfig, assumptions: Assumptions, stage: int, backward: bool = True) -> float:
    """Per sample, the vector-unit time of a stage's attention scores on one of its IPUs: heads x s^2 a layer,
    split over the t IPUs as the heads are (with a second axis attention is whole on each IPU of a t2 group, as
    attention_flops_beyond_share counts it), spread over the compute tiles at assumptions' cycles a score; the
    forward pass only, or the whole tick's (forward, recomputed forward, backward)."""
    model, lay = workload.model, workload.layout
    scores = model.attention_scores()
    if not scores:
        return 0.0
    cycles = assumptions.score_forward_cycles
    if backward:
        cycles = cycles * (2 if recomputes(lay) else 1) + assumptions.score_backward_cycles
    layers = len(layout_stage_layers(model, lay, stage))
    tiles = pod.ipu.tiles - lay.io_tiles
    return layers * scores / lay.t * cycles / (tiles * pod.ipu.clock_hz)


def stage_forward_flops(workload) -> list[float]:
    """Forward FLOPs per sample of each pipeline stage (all t shards together). A transformer's stage does its
    layers (layers_per_stage, or the split its memory is counted on) and the first stage the tied head too;
    other models are split evenly."""
    model, lay = workload.model, workload.layout
    p = lay.p
    if model.kind != "transformer":
        return [model.forward_flops() / p] * p
    counts = [len(layout_stage_layers(model, lay, s)) for s in range(p)]
    return [n * model.layer_flops() + (model.head_flops() if s == 0 else 0.0) for s, n in enumerate(counts)]


def host_receivers(lay, pod: PodConfig) -> int:
    """IPUs of the first pipeline stage on one machine (the inputs' receivers; every machine alike)."""
    return sum(1 for ipu in range(min(lay.ipus, pod.machine.ipus)) if (ipu // lay.tp) % lay.p == 0)


def host_io_s(workload, pod: PodConfig, assumptions: Assumptions) -> float:
    """A step's host I/O: its share of a call from the hosts (one per device_iterations steps), then m
    micro-batches' inputs into each machine's first-stage IPUs over its host connection, at the job's host
    slowdown; none with synthetic data (as every run the emulator executes: train/problem.py)."""
    lay = workload.layout
    if workload.synthetic:
        return 0.0
    nbytes = host_receivers(lay, pod) * lay.micro_batch * workload.model.input_bytes()
    per_micro_batch = (assumptions.host_sync_s(pod, lay.ipus)
                       + nbytes / assumptions.host_bytes_per_s * assumptions.host_slowdown(pod, lay.ipus))
    return assumptions.host_call_s / lay.device_iterations + lay.micro_batches * per_micro_batch


def compute_sets(t: int, tp_count: float) -> int:
    """BSP compute sets of the busiest stage per tick, each ending in an on-chip sync (pod.ipu.sync_s): one per
    forward and backward pass, or with t > 1 one before each tensor-parallel collective (the compute a collective
    waits for; Megatron's blocks end in one)."""
    return max(2, math.ceil(tp_count)) if t > 1 else 2


def forward_part(workload, pod: PodConfig, assumptions: Assumptions, send_s: float, sync: float,
                 stage: int, stage_flops: float, norm_sync: float) -> float:
    """A stage's forward operation of one micro-batch, of its tick (the rest is its backward, recomputation
    included): the forward's FLOPs and compute sets, its share of the tensor-parallel and batch-norm allreduces,
    the send to the next stage (send_s, 0 on the last) and the syncs before each."""
    model, lay = workload.model, workload.layout
    b, t, p = lay.micro_batch, lay.tp, lay.p
    flops = pod.ipu.flops_per_s(model.dtype) * assumptions.efficiency(model) * compute_share(lay, pod)
    tp, tp_collectives, tp_sets = tensor_parallel(workload, pod, assumptions.ild_collective, 1, 0)
    sets = max(1, tp_sets)
    own = stage_flops / t + attention_flops_beyond_share(workload, 1)
    compute = b * (own / flops + score_s(workload, pod, assumptions, stage, backward=False)) + sets * pod.ipu.sync_s
    norms, norm_bytes = model.norm_allreduces()
    norm = allreduce(pod, GroupShape(model.norm_replicas, t * p), norm_bytes, norms,
                     assumptions.ild_collective).total_s if norms else 0.0
    collectives = tp_collectives + (1 if send_s else 0)
    return compute + tp + norm + send_s + collectives * sync + norms * norm_sync


def gpipe_pipeline_s(forwards: list[float], backwards: list[float], m: int) -> float:
    """GPipe's pipeline time from each stage's forward and backward operation: every micro-batch's forward crosses
    the stages (the slowest forward paces the m - 1 after the first: a flow shop of identical jobs), then every
    backward crosses back. Equal to 1F1B's m ticks of the busiest stage plus the others' only when one stage has
    both the slowest forward and the slowest backward."""
    return sum(forwards) + sum(backwards) + (m - 1) * (max(forwards) + max(backwards))


def streamed_bytes(lay, weights: float, state: float, stash: float) -> tuple[float, float]:
    """(in, out) bytes one IPU moves to and from Streaming Memory in a step, given what it stores there (weights
    as stored, optimiser state, stashed block inputs): phased, the weights 4 times in (forward, recomputation,
    backward, update), the gradients in for the update, the state and the stash; out the gradients, weights,
    state and stash. Optimiser offload: the state each way. The emulator charges the same (train/parallel.py)."""
    if lay.phased:
        return 5 * weights + state + stash, 2 * weights + state + stash
    return (state, state) if lay.offload_optimizer else (0.0, 0.0)


def step_time(workload, pod: PodConfig, assumptions: Assumptions) -> StepTime:
    model, lay = workload.model, workload.layout
    b, t, p, r, m = lay.micro_batch, lay.tp, lay.p, lay.r, lay.micro_batches
    flops = pod.ipu.flops_per_s(model.dtype) * assumptions.efficiency(model) * compute_share(lay, pod)
    passes = 3 if recomputes(lay) else 2  # forward (+ recomputed forward) + backward
    tp_tick, tp_collectives, tp_sets = tensor_parallel(workload, pod, assumptions.ild_collective, passes - 1, 1)
    set_syncs_tick = compute_sets(t, tp_sets) * pod.ipu.sync_s
    stage_flops = stage_forward_flops(workload)
    beyond = attention_flops_beyond_share(workload, passes + 1)
    compute_ticks = [b * ((f * passes_factor(lay) / t + beyond) / flops + score_s(workload, pod, assumptions, stage))
                     + set_syncs_tick for stage, f in enumerate(stage_flops)]

    boundary = model.boundary_bytes(b)
    forward, back = stage_sends(pod, t, p, round(boundary / model.value_bytes), model.value_bytes)
    gather = all_gather(pod, t, boundary)
    # each stage's sends per tick: forward to the next stage, back to the previous one, each then all-gathered
    # by its receivers; routes differ between boundaries, so the stages' ticks may too
    sends = []
    for stage in range(p):
        ahead = [forward[stage] + gather] if stage < p - 1 else []
        sends.append(ahead + ([back[stage - 1] + gather] if stage > 0 else []))

    norms, norm_bytes = model.norm_allreduces()
    norm_tick = allreduce(pod, GroupShape(model.norm_replicas, t * p), passes * norm_bytes, passes * norms,
                          assumptions.ild_collective).total_s if norms else 0.0

    sync = assumptions.sync_s(pod, t * p * r)
    norm_sync = assumptions.sync_s(pod, model.norm_replicas * t * p)  # the pooling replicas' IPUs only
    norm_syncs_tick = passes * norms * norm_sync
    collective_syncs = tp_collectives
    ticks = [compute_ticks[stage] + tp_tick + sum(out) + norm_tick + (collective_syncs + len(out)) * sync
             + norm_syncs_tick for stage, out in enumerate(sends)]
    if lay.t2 > 1 and p > 1:  # the first stage gathers no input gradient: it sends none back (tensor_axes.py)
        ticks[0] -= stage_gather_s(workload, pod) + sync
    busiest = max(range(p), key=ticks.__getitem__)
    tick, send_tick = ticks[busiest], sum(sends[busiest])
    sync_tick = (collective_syncs + len(sends[busiest])) * sync + norm_syncs_tick
    edge_tick = max(ticks[0], ticks[-1])
    # the busiest stage waits while the first micro-batch crosses every other stage and the last one crosses back
    bubble = sum(ticks) - tick
    if lay.order == "gpipe":
        forwards = [forward_part(workload, pod, assumptions, sends[stage][0] if stage < p - 1 else 0.0, sync,
                                 stage, stage_flops[stage], norm_sync) for stage in range(p)]
        bubble = gpipe_pipeline_s(forwards, [tk - f for tk, f in zip(ticks, forwards)], m) - m * tick

    value = model.value_bytes
    share = model.params() / (t * p)
    tensors = lay.gradient_collectives(math.ceil(model.param_tensors() / p), share * value)
    replicas = GroupShape(r, t * p)
    if lay.shards_weights:
        halves = {op: allreduce_half(pod, replicas, share * value, op, tensors, assumptions.ild_collective).total_s
                  for op in ("reduce_scatter", "all_gather")}
        dp = halves["reduce_scatter"] + WEIGHT_GATHERS * halves["all_gather"]
        dp_sync = (1 + WEIGHT_GATHERS) * tensors * sync
    else:
        dp = allreduce(pod, replicas, share * value, tensors, assumptions.ild_collective).total_s
        dp_sync = tensors * sync if r > 1 else 0.0

    machine = pod.machine
    sharing = min(machine.ipus, lay.ipus)  # the job's IPUs on one machine, streaming at once
    reads, writes = streamed_bytes(lay, stored_weight_bytes(workload), optimizer_bytes(workload),
                                   stash_bytes(workload))
    streaming = duplex_s(sharing * reads, sharing * writes, machine.streaming_memory_bytes_per_s,
                         machine.streaming_memory_latency_s)

    return StepTime(
        compute_s=m * compute_ticks[busiest], bubble_s=bubble, bubble_fraction=float(lay.bubble_fraction),
        tensor_parallel_s=m * tp_tick, pipeline_send_s=m * send_tick, batch_norm_s=m * norm_tick,
        sync_s=m * sync_tick + dp_sync, data_parallel_s=dp, streaming_s=streaming,
        host_io_s=host_io_s(workload, pod, assumptions),
        tick_s=tick, edge_tick_s=edge_tick, compute_sync_s=m * set_syncs_tick,
    )
