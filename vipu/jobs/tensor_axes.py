"""The tensor-parallel collectives of one pipeline tick, on one axis (Megatron) or two (PopXL's GPT-3).

One axis (t2 = 1): per layer and pass, the model's tp_allreduces_per_layer allreduces of tp_bytes(b) over the t
adjacent IPUs of a stage (timing.py's figures).

Two axes (t x t2, transformers; vipu/sdk/nn/transformer2d.py runs exactly these), per layer:
- forward: over each group of t2 adjacent IPUs, the Q K V partial sums (3 b s h / t values), the feed-forward's
  first matrix's (f b s h / t) and the two distributed layer norms' mean and variance (4 allreduces of b s values):
  6 allreduces; over each group of t IPUs t2 apart, the attention output's and the feed-forward output's partial
  sums (b s h / t2 each): 2 allreduces, all t2 groups at once on strided rings (collective_time.strided_allreduce);
- backward: over t2, the context's and the feed-forward's hidden gradient (b s h / t, f b s h / t) and the two
  layer norms' sums (2 b s values each): 4 allreduces; over t the same 2 as forward;
- a stage's output (b s h values) is all-gathered over t2 after its forward, and its input gradient after its
  backward when there is a stage before it (stage boundaries carry whole activations), priced on every tick.
The embedding and head of a vocabulary model (planned, never executed) are not counted on the second axis.

Compute sets (BSP, timing.compute_sets): with two axes 4 a layer and pass, one before each allreduce that follows a
matmul (Q K V, the attention output, each feed-forward matrix; backward their gradients); a layer norm's allreduces
follow no FLOPs and end none (with t = 1 fewer: tensor_parallel). Attention itself (Q K^T and the weighted sum of V)
runs whole for the t-group's heads on each of its t2 IPUs (PopXL: "sharded tp1, identical tp2"), so an IPU does 1/t
of it, not 1/(t t2): attention_flops_beyond_share.
"""

from __future__ import annotations

import math

from vipu.hardware.pod import PodConfig
from vipu.jobs.collective_time import GroupShape, all_gather, allreduce


def tensor_parallel(workload, pod: PodConfig, algorithm: str, forwards: int,
                    backwards: int) -> tuple[float, int, int]:
    """(seconds, collectives, compute sets they end) of a stage's tensor-parallel collectives for one
    micro-batch: `forwards` forward passes (2 with recomputation: the backward runs the forward again) and
    `backwards` backward passes."""
    model, lay = workload.model, workload.layout
    b, p = lay.micro_batch, lay.p
    if lay.t2 == 1:
        count = model.units / p * model.tp_allreduces_per_layer * (forwards + backwards)
        seconds = allreduce(pod, GroupShape(lay.t), count * model.tp_bytes(b), math.ceil(count), algorithm).total_s
        collectives = math.ceil(count) if lay.t > 1 else 0
        return seconds, collectives, collectives
    t, t2, value = lay.t, lay.t2, model.value_bytes
    s, h, f = model.seq_len, model.hidden, model.ffn_multiplier
    layers = model.units / p
    tokens = b * s * value
    inner_counts = (6 * forwards + 4 * backwards) * layers
    inner = tokens * ((3 * h / t + f * h / t + 4) * forwards + (h / t + f * h / t + 4) * backwards) * layers
    outer_counts = 2 * (forwards + backwards) * layers
    outer = tokens * 2 * h / t2 * (forwards + backwards) * layers
    gathers = (1 if forwards else 0) + (1 if backwards and p > 1 else 0)
    seconds = (allreduce(pod, GroupShape(t2), inner, math.ceil(inner_counts), algorithm).total_s
               + allreduce(pod, GroupShape(t, t2), outer, math.ceil(outer_counts), algorithm).total_s
               + gathers * stage_gather_s(workload, pod))
    collectives = math.ceil(inner_counts) + (math.ceil(outer_counts) if t > 1 else 0) + gathers
    # with t = 1 the t-axis sums are no exchange, so a recomputed block's last matmul and its backward's first
    # share a compute set: one fewer per recomputed block (phased: attention and feed-forward are blocks each)
    merged = layers * (2 if lay.phased else 1) * (forwards - 1) if t == 1 else 0
    return seconds, collectives, math.ceil(4 * layers * (forwards + backwards) - merged)


def stage_gather_s(workload, pod: PodConfig) -> float:
    """One all-gather of a stage's output (or input gradient), b s h values, over each t2 group at once."""
    model, lay = workload.model, workload.layout
    if lay.t2 == 1:
        return 0.0
    return all_gather(pod, lay.t2, lay.micro_batch * model.seq_len * model.hidden * model.value_bytes)


def attention_flops_beyond_share(workload, passes: int) -> float:
    """FLOPs per sample an IPU of a stage does beyond its 1/(t t2 p) share: attention, whole on each of the t2 IPUs
    of a t-group (forward 4 s^2 h / t a layer, backward twice that; `passes` as training_flops_per_sample counts
    the forward: 3, or 4 recomputing)."""
    model, lay = workload.model, workload.layout
    if lay.t2 == 1:
        return 0.0
    s, h = model.seq_len, model.hidden
    return model.units / lay.p * 4 * s * s * h * (1 / lay.t - 1 / lay.tp) * passes
