"""Where the planner's three calibrated constants come from: three measured Bow runs, and the solve that fits them.

No Graphcore document gives how much of peak FLOPS ResNet-50 training sustains, or what a sync across a partition
costs. Their MLPerf Training v2.0 ResNet-50 submissions log both indirectly: each Bow Pod16, Pod64 and Pod256 run
(closed division, TensorFlow 1, SDK 2.5.1) records when every epoch of ImageNet's 1,281,167 training images
started and stopped, so a run's throughput is its images over its median epoch. Why the median: some epochs also
save a checkpoint (every fourth is 4-18% longer) and the last one winds the run down; the planner predicts a
training step, not those. The planner's step time is linear in 1 / compute_efficiency, sync_per_machine_s and
gateway_sync_s, so three runs on three Pod sizes determine all three exactly (nothing is left over to check them
with): `solve()` finds them and assumptions.py's defaults are those values, rounded (a test keeps them in step).

The figures in hardware.md are other runs (graphcore.ai/performance-results): on Pod16 and Pod64 with other
micro-batches and accumulation counts, on Pod256 the same config as here. Against them the planner predicts, but
for ResNet-50 that tests only how its step time follows the config; BERT-Large, fitted to nothing, is the check
of the model itself (bench/bench_planner.py).
Source of each run: mlcommons/training_results_v2.0 (commit 482ba246), Graphcore/results/<system>/resnet/
result_<n>.txt, its global_batch_size, gradient_accumulation_steps and model_bn_span lines and its epoch_start /
epoch_stop times; the configs are graphcore/examples' mk2_resnet50_mlperf_pod{16,64,256}_lars (LARS, BN_span = 2
micro-batches, recomputation, max_cross_replica_buffer_size 52428800).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from vipu.hardware.pod_files import load_pod
from vipu.jobs.assumptions import Assumptions
from vipu.jobs.planner import plan
from vipu.jobs.train_spec import TrainWorkload

IMAGENET_TRAIN_IMAGES = 1_281_167
GRADIENT_BUFFER_BYTES = 52_428_800  # the configs' max_cross_replica_buffer_size


def resnet50(replicas: int, micro_batch: int, accumulation: int, batch_norm_replicas: int = 2) -> TrainWorkload:
    """Graphcore's TensorFlow 1 ResNet-50 training: one replica per IPU, fp16, recomputation, momentum state."""
    return TrainWorkload(
        model={"kind": "resnet50", "dtype": "fp16", "batch_norm_replicas": batch_norm_replicas},
        optimizer="sgd", master_weights=False,
        layout={"t": 1, "p": 1, "r": replicas, "micro_batch": micro_batch, "micro_batches": accumulation,
                "recompute": True})


def resnet50_assumptions(**fitted: float) -> Assumptions:
    """Their gradients go in cross-replica sums of at most 50 MiB (ResNet-50's 51.1 MB of fp16 gradients: one)."""
    return Assumptions(gradient_collectives="buffered", gradient_buffer_bytes=GRADIENT_BUFFER_BYTES, **fitted)


@dataclass(frozen=True)
class Run:
    system: str  # the result folder
    pod: str  # our preset
    micro_batch: int
    accumulation: int
    epoch_ms: tuple[int, ...]  # epoch_stop - epoch_start of every epoch, in order

    @property
    def replicas(self) -> int:
        return load_pod(self.pod).ipus

    @property
    def images_per_s(self) -> float:
        return IMAGENET_TRAIN_IMAGES / (statistics.median(self.epoch_ms) / 1e3)

    @property
    def step_s(self) -> float:
        return self.replicas * self.micro_batch * self.accumulation / self.images_per_s

    def workload(self) -> TrainWorkload:
        return resnet50(self.replicas, self.micro_batch, self.accumulation)


RUNS = (
    Run("ipu-pod16-TF1-closed/resnet/result_0.txt", "bow-pod16", 22, 10, (
        29774, 29575, 30863, 29858, 29635, 29576, 30881, 29658, 29648, 29663, 30983, 29750, 29793, 29794, 30910,
        29592, 29717, 29694, 36461, 29606, 29627, 30430, 30149, 29710, 29684, 29633, 30586, 29548, 29653, 29533,
        30521, 29797)),
    Run("ipu-pod64-TF1-closed/resnet/result_0.txt", "bow-pod64", 20, 4, (
        8640, 8505, 8712, 9329, 8989, 8725, 8621, 9299, 9025, 8742, 8591, 9263, 8921, 8714, 8656, 9427, 8979, 8692,
        8649, 9336, 9006, 8618, 8612, 9167, 9025, 8689, 8589, 9170, 8909, 8489, 8603, 9372, 9021, 8553, 8585, 9124,
        8832, 8569, 8778, 11036)),
    Run("ipu-pod256-TF1-closed/resnet/result_1.txt", "bow-pod256", 20, 2, (
        3389, 3115, 2975, 2847, 3454, 3094, 2820, 2881, 3467, 3050, 2828, 2840, 3431, 3124, 2941, 2953, 3348, 3067,
        2827, 2827, 3440, 3126, 2887, 2775, 3422, 3086, 2870, 2837, 3338, 3106, 2896, 2806, 3554, 3074, 2815, 2900,
        3489, 3084, 2832, 2852, 3467, 3233, 2846, 2841, 3950)),
)
FITTED = ("compute_efficiency", "sync_per_machine_s", "gateway_sync_s")


def predicted_step_s(run: Run, assumptions: Assumptions) -> float:
    return plan(run.workload(), load_pod(run.pod), assumptions).step_s


def solve(runs: tuple[Run, ...] = RUNS) -> dict[str, float]:
    """The compute efficiency and sync costs with which the planner gives the runs' step times exactly (three
    linear equations in three unknowns)."""
    zero = {"compute_efficiency": 1.0, "sync_per_machine_s": 0.0, "gateway_sync_s": 0.0}
    unit = {"compute_efficiency": 0.5, "sync_per_machine_s": 1e-6, "gateway_sync_s": 1e-6}  # +1 in each unknown
    rows, rhs = [], []
    for run in runs:
        base = predicted_step_s(run, resnet50_assumptions(**zero))
        rows.append([predicted_step_s(run, resnet50_assumptions(**{**zero, k: unit[k]})) - base for k in FITTED])
        # the time that does not depend on the unknowns: base minus its 1 / efficiency = 1 share
        rhs.append(run.step_s - (base - rows[-1][0]))
    inverse_efficiency, per_machine, gateway = np.linalg.solve(np.array(rows), np.array(rhs))
    return {"compute_efficiency": 1 / inverse_efficiency, "sync_per_machine_s": per_machine * 1e-6,
            "gateway_sync_s": gateway * 1e-6}
