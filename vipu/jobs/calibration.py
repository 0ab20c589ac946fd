"""Where the planner's fitted constants come from: five published Bow results, and the solve that fits them.

No Graphcore document gives how much of peak FLOPS a model's training sustains, or what feeding a job from its
hosts costs as it spans more of a Pod. Five published results fix the five fitted figures (assumptions.py), and
nothing else is fitted; bench/bench_planner.py then predicts other published results (held out) with them.
- ResNet-50: Graphcore's MLPerf Training v2.0 submissions log when every epoch of ImageNet's 1,281,167 training
  images started and stopped on a Bow Pod16, Pod64 and Pod256 (closed division, TensorFlow 1, SDK 2.5.1), so a
  run's throughput is its images over its median epoch. Why the median: some epochs also save a checkpoint (every
  fourth is 4-18% longer) and the last one winds the run down; the planner predicts a step. Their time per image
  grows from Pod16 to Pod256 whatever the gradient accumulation (Graphcore's published table gives about the same
  throughput at half the accumulation), so the loss is per micro-batch, not per step.
- BERT-Large phase 1 (SL128), PopART, on a Bow Pod16 and a Pod64 (Graphcore's published table). It loses about
  7% per micro-batch from Pod16 to Pod64 too, far less than ResNet-50 does, though its inputs are 1/200 of an
  image's bytes: so host input is priced as a sync with the hosts per micro-batch (growing with the doublings of
  the machines spanned) plus the bytes at the host connection's rate, slower per doubling of the machines and per
  level of Pod64s (the shapes are assumptions).
The five unknowns (convolution and matmul efficiency, host sync per doubling, the two slowdowns) enter the step
time linearly (the efficiencies as 1 / efficiency), so the five points give them exactly: nothing is left over
to check them with, and a further MLPerf run, on a Pod128, is held out with the bench's other points.
Every point is planned from a job spec through plan_spec, as `vipu plan SPEC` plans a user's file, and
assumptions.py's defaults are the solved values, rounded (a test keeps them in step).
Sources: mlcommons/training_results_v2.0 (commit 482ba246), Graphcore/results/<system>/resnet/result_<n>.txt, its
global_batch_size, gradient_accumulation_steps and model_bn_span lines and its epoch_start / epoch_stop times; the
configs are graphcore/examples' mk2_resnet50_mlperf_pod{16,64,256}_lars (LARS, BN_span = 2 micro-batches,
recomputation, max_cross_replica_buffer_size 52428800). BERT: graphcore.ai/performance-results ("Bow Platform -
Training", mirrored at graphcore.cn/performance-results), BERT Large Ph1 Pre-Training (SL128), PopART, global batch
65,536: 5,179 sequences/s on a Bow Pod16, 19,353 on a Pod64; config graphcore/examples
nlp/bert/popart/configs/pretrain_large_128.json.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from vipu.jobs.assumptions import Assumptions
from vipu.jobs.planner import Plan, plan
from vipu.jobs.train_spec import plan_spec

IMAGENET_TRAIN_IMAGES = 1_281_167
GRADIENT_BUFFER_BYTES = 52_428_800  # the configs' max_cross_replica_buffer_size
PODS = {16: "bow-pod16", 64: "bow-pod64", 128: "bow-pod128", 256: "bow-pod256"}


def resnet50_spec(replicas: int, micro_batch: int, accumulation: int, batch_norm_replicas: int = 2,
                  available_memory_proportion: float = 0.15) -> dict:
    """Graphcore's TensorFlow 1 ResNet-50 training as a job spec: one replica per IPU, fp16, recomputation,
    momentum state, gradients in cross-replica sums of at most 50 MiB (ResNet-50's 51.1 MB of fp16: one), and the
    configs' available_memory_proportion (0.15 in mk2_resnet50_mlperf_pod16_lars, which the other LARS configs
    inherit, and in pod16_bs20; pod64_bs20 0.145)."""
    return {"ipus": replicas, "pod": PODS[replicas], "workload": {
        "kind": "train", "optimizer": "sgd", "master_weights": False,
        "model": {"kind": "resnet50", "dtype": "fp16", "batch_norm_replicas": batch_norm_replicas},
        "layout": {"r": replicas, "micro_batch": micro_batch, "micro_batches": accumulation, "recompute": True,
                   "gradient_reduction": "buffered", "gradient_buffer_bytes": GRADIENT_BUFFER_BYTES,
                   "available_memory_proportion": available_memory_proportion}}}


def bert_spec(ipus: int, layers: int, hidden: int, heads: int, seq_len: int, mask_tokens: int, micro_batch: int,
              global_batch: int, layers_per_stage: list[int], sequences_per_pack: float = 1.0) -> dict:
    """Graphcore's PopART BERT pre-training configs as a job spec: 4 pipeline stages (the embedding and its tied
    MLM head on the first), fp16 with stochastic rounding, LAMB, optimiser state off-chip and sharded (RTS),
    recomputation, per-tensor gradient allreduces (PopART), vocabulary 30,400."""
    r = ipus // 4
    return {"ipus": ipus, "pod": PODS[ipus], "workload": {
        "kind": "train", "optimizer": "adam", "master_weights": False,
        "model": {"kind": "transformer", "layers": layers, "hidden": hidden, "heads": heads, "seq_len": seq_len,
                  "vocab": 30400, "mask_tokens": mask_tokens, "sequences_per_pack": sequences_per_pack},
        "layout": {"p": 4, "r": r, "micro_batch": micro_batch, "micro_batches": global_batch // (micro_batch * r),
                   "recompute": True, "rts": True, "offload_optimizer": True, "gradient_reduction": "per_tensor",
                   "layers_per_stage": layers_per_stage}}}


def plan_of(spec: dict, assumptions: Assumptions) -> Plan:
    """The plan `vipu plan` makes of the spec (the same validation and Pod), with the given assumptions."""
    checked, pod = plan_spec(spec)
    return plan(checked.workload, pod, assumptions)


@dataclass(frozen=True)
class Run:
    system: str  # the result file under mlcommons/training_results_v2.0 Graphcore/results/
    replicas: int
    micro_batch: int
    accumulation: int
    epoch_ms: tuple[int, ...]  # epoch_stop - epoch_start of every epoch, in order

    @property
    def images_per_s(self) -> float:
        return IMAGENET_TRAIN_IMAGES / (statistics.median(self.epoch_ms) / 1e3)

    @property
    def step_s(self) -> float:
        return self.replicas * self.micro_batch * self.accumulation / self.images_per_s

    def spec(self) -> dict:
        return resnet50_spec(self.replicas, self.micro_batch, self.accumulation)


RUNS = (
    Run("ipu-pod16-TF1-closed/resnet/result_0.txt", 16, 22, 10, (
        29774, 29575, 30863, 29858, 29635, 29576, 30881, 29658, 29648, 29663, 30983, 29750, 29793, 29794, 30910,
        29592, 29717, 29694, 36461, 29606, 29627, 30430, 30149, 29710, 29684, 29633, 30586, 29548, 29653, 29533,
        30521, 29797)),
    Run("ipu-pod64-TF1-closed/resnet/result_0.txt", 64, 20, 4, (
        8640, 8505, 8712, 9329, 8989, 8725, 8621, 9299, 9025, 8742, 8591, 9263, 8921, 8714, 8656, 9427, 8979, 8692,
        8649, 9336, 9006, 8618, 8612, 9167, 9025, 8689, 8589, 9170, 8909, 8489, 8603, 9372, 9021, 8553, 8585, 9124,
        8832, 8569, 8778, 11036)),
    Run("ipu-pod256-TF1-closed/resnet/result_1.txt", 256, 20, 2, (
        3389, 3115, 2975, 2847, 3454, 3094, 2820, 2881, 3467, 3050, 2828, 2840, 3431, 3124, 2941, 2953, 3348, 3067,
        2827, 2827, 3440, 3126, 2887, 2775, 3422, 3086, 2870, 2837, 3338, 3106, 2896, 2806, 3554, 3074, 2815, 2900,
        3489, 3084, 2832, 2852, 3467, 3233, 2846, 2841, 3950)),
)
# held out: the same config on a Bow Pod128 (global batch 5,120 = 128 x 20 x 2), bench/bench_planner.py
POD128_RUN = Run("ipu-pod128-TF1-closed/resnet/result_0.txt", 128, 20, 2, (
    5995, 5672, 5413, 5398, 5987, 5656, 5412, 5391, 5885, 5610, 5335, 5365, 6018, 5723, 5327, 5559, 6075, 5664,
    5483, 5429, 5982, 5680, 5363, 5392, 6040, 5897, 5337, 5355, 5947, 5625, 5318, 5388, 6065, 5559, 5343, 5357,
    6030, 5717, 5342, 5405, 7025))
FITTED = ("conv_efficiency", "compute_efficiency", "host_sync_per_doubling_s", "host_slowdown_per_doubling",
          "host_slowdown_per_pod64_level")
INVERSE = ("conv_efficiency", "compute_efficiency")  # the step time is linear in 1 / these, and in the others
# Graphcore's published BERT-Large phase 1 (SL128) throughput on a Bow Pod16 and a Pod64, PopART, and its config
# (pretrain_large_128.json: micro-batch 8, global batch 65,536, layers_per_ipu [3, 7, 7, 7], mask_tokens 20;
# replication 4 on a Pod16, so 16 on a Pod64)
BERT_FIT_SPECS = {16: bert_spec(16, 24, 1024, 16, 128, 20, 8, 65_536, [3, 7, 7, 7]),
                  64: bert_spec(64, 24, 1024, 16, 128, 20, 8, 65_536, [3, 7, 7, 7])}
BERT_FIT_SEQUENCES_PER_S = {16: 5_179, 64: 19_353}


def predicted_step_s(run: Run, assumptions: Assumptions) -> float:
    return plan_of(run.spec(), assumptions).step_s


def fit_points(runs: tuple[Run, ...] = RUNS) -> list[tuple[dict, float]]:
    """(spec, published step time) of every point the constants are fitted to."""
    bert = [(BERT_FIT_SPECS[n], 65_536 / BERT_FIT_SEQUENCES_PER_S[n]) for n in (16, 64)]
    return [(run.spec(), run.step_s) for run in runs] + bert


def solve(runs: tuple[Run, ...] = RUNS, fixed: dict | None = None) -> dict[str, float]:
    """The fitted constants with which the planner gives every fit point's step time exactly: the step time is
    linear in 1 / each efficiency and in each host figure, so a unit step in each finds its coefficient, and five
    points fix the five figures. `fixed`: other assumptions to fit with (e.g. no attention-score work)."""
    points = fit_points(runs)
    base_values = {**(fixed or {}), **{k: (1.0 if k in INVERSE else 0.0) for k in FITTED}}
    rows, rhs = [], []
    for spec, step_s in points:
        base = plan_of(spec, Assumptions(**base_values)).step_s
        row = []
        for k in FITTED:
            unit = {**base_values, k: 0.5 if k in INVERSE else 1.0}  # +1 in 1 / efficiency, or in the figure
            row.append(plan_of(spec, Assumptions(**unit)).step_s - base)
        rows.append(row)
        # the time that depends on none of the figures: base less its 1 / efficiency = 1 shares
        rhs.append(step_s - (base - sum(row[FITTED.index(k)] for k in INVERSE)))
    solved = dict(zip(FITTED, (float(x) for x in np.linalg.solve(np.array(rows), np.array(rhs)))))
    for k in INVERSE:
        solved[k] = 1 / solved[k]
    return solved
