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
"""

from __future__ import annotations

import math

from vipu.hardware.pod import PodConfig
from vipu.jobs.collective_time import GroupShape, all_gather, allreduce


def tensor_parallel(workload, pod: PodConfig, algorithm: str, forwards: int, backwards: int) -> tuple[float, int]:
    """(seconds, collectives) of a stage's tensor-parallel collectives for one micro-batch: `forwards` forward
    passes (2 with recomputation: the backward runs the forward again) and `backwards` backward passes."""
    model, lay = workload.model, workload.layout
    b, p = lay.micro_batch, lay.p
    if lay.t2 == 1:
        count = model.units / p * model.tp_allreduces_per_layer * (forwards + backwards)
        seconds = allreduce(pod, GroupShape(lay.t), count * model.tp_bytes(b), math.ceil(count), algorithm).total_s
        return seconds, math.ceil(count) if lay.t > 1 else 0
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
               + gathers * all_gather(pod, t2, tokens * h))
    return seconds, math.ceil(inner_counts) + (math.ceil(outer_counts) if t > 1 else 0) + gathers
