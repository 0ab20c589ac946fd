"""The planner's stated assumptions: every figure it needs that no Graphcore document publishes.

Hardware figures (tiles, SRAM, FLOPS, link and Streaming Memory bandwidths) come from the Pod preset (PodConfig),
with their standing in hardware/presets/bow-2000.yaml. What is left is how well software uses that hardware; each
default below carries its standing, and `vipu plan` and bench/bench_planner.py print them with every prediction, so
a reader can tell which figure drives a result and override it (Assumptions(compute_efficiency=0.3)).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from vipu.jobs.tile_memory import MAPPING_GRAIN

# `vipu plan`'s suggestions (suggest.py): among the fitting layouts predicted within this fraction of the best
# throughput, the micro-batch size nearest the spec's comes first (compute efficiency ignores micro-batch size)
NEAR_BEST = 0.05


class Assumptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    compute_efficiency: float = Field(
        0.284, gt=0, le=1,
        description="fraction of peak FLOPS the IPU sustains on a model's compute: one global constant, never refitted"
        " per system or model; calibrated with the two sync costs below on Graphcore's MLPerf v2.0 ResNet-50 runs on"
        " Bow Pod16/64/256 (vipu/jobs/calibration.py)",
    )
    reserved_sram_fraction: float = Field(
        0.15, ge=0, lt=1,
        description="SRAM taken by compiled code, vertex state and exchange buffers before any tensor (assumption:"
        " not published; Poplar profiles of large models commonly show 10-25%)",
    )
    gradient_collectives: Literal["per_tensor", "fused", "buffered"] = Field(
        "per_tensor",
        description="per_tensor: one data-parallel allreduce per parameter tensor, each paying the ring's latency"
        " (PopART's default: collective merging off); fused: one allreduce of all of a stage's gradients;"
        " buffered: gradients gathered into allreduces of at most gradient_buffer_bytes each (TensorFlow's"
        " IPUConfig.optimizations.maximum_cross_replica_sum_buffer_size)",
    )
    gradient_buffer_bytes: int = Field(
        52_428_800, gt=0,
        description="with buffered gradients, the most bytes one allreduce carries. Documented for Graphcore's"
        " ResNet-50 runs: max_cross_replica_buffer_size 52428800 (50 MiB) in mk2_resnet50_mlperf_pod16, the base of"
        " the pod16_bs20 / pod64_bs20 / pod256_lars configs (graphcore/examples applications/tensorflow/cnns/"
        "training/configs.yml; the option is 'the maximum number of bytes that can be waiting before a cross"
        " replica sum op is scheduled', README)",
    )
    sync_per_machine_s: float = Field(
        0.61e-6, ge=0,
        description="what one partition-wide sync costs per IPU-Machine it spans inside one IPU-Link domain (at most"
        " a Pod64's 16; Sync-Links run machine to machine, so a sync's latency grows with the machines it spans;"
        " across Pod64s gateway_sync_s is added). Every collective and inter-IPU exchange"
        " starts with one. Not published; calibrated with compute_efficiency and gateway_sync_s on Graphcore's"
        " MLPerf v2.0 ResNet-50 runs on Bow Pod16/64/256 (vipu/jobs/calibration.py)",
    )
    gateway_sync_s: float = Field(
        19.4e-6, ge=0,
        description="what a partition-wide sync costs on top when the partition spans IPU-Link domains (it goes"
        " through the IPU-Gateways over GW-Links). Not published; calibrated as sync_per_machine_s is",
    )
    ild_collective: Literal["ring", "2d"] = Field(
        "ring",
        description="inside an IPU-Link domain: ring, 2(n-1) steps round the group (the issue's model); 2d,"
        " reduce-scatter round each machine's IPUs then along the machines, 2((c-1) + (n/c-1)) steps, same bytes",
    )

    def lines(self) -> list[str]:
        """The assumptions as report lines, the fixed ones (not configurable here) included."""
        return [
            f"compute efficiency {self.compute_efficiency:.2f} of peak FLOPS (calibrated: vipu/jobs/calibration.py),"
            " the same for every micro-batch size: small micro-batches, which real IPUs run less efficiently (fewer"
            " samples to spread over the tiles, the same fixed costs per micro-batch), are predicted as fast per sample"
            " as large ones, so suggested layouts within"
            f" {NEAR_BEST:.0%} of the best predicted throughput list the micro-batch size nearest the spec's first",
            f"code and exchange buffers take {self.reserved_sram_fraction:.0%} of SRAM",
            "training FLOPs = 3 x forward (forward, backward for activations, backward for weights);"
            " 4 x with recomputation",
            "memory counted per pipeline stage, as the layers fall (an embedding takes layers off the first stage),"
            " the largest reported; time with balanced stages: each IPU does 1/(t p) of the FLOPs",
            "tile mapping: each tensor linear over the compute tiles (all but io_tiles) from tile 0 in"
            f" {MAPPING_GRAIN}-byte grains, the fullest tile deciding; the largest block's activations of one micro-batch as matmul"
            " temporaries, at most available_memory_proportion of a tile (vipu/jobs/tile_memory.py)",
            f"data-parallel gradients reduced {self.gradient_description()}, after the last micro-batch, not"
            " overlapped with compute (BSP: an IPU computes or exchanges, never both)",
            "IPU numbering: tensor shards innermost, then pipeline stages, then replicas (t IPUs of a shard group"
            " are adjacent; replicas are t x p IPUs apart)",
            f"collectives: {self.ild_collective} alpha-beta on the preset's link figures; inside an IPU-Link"
            " domain 4 directed rings on a whole torus Pod64, 2 on smaller groups or a mesh, 1 for 2 IPUs; across"
            " Pod64s hierarchical (reduce-scatter, GW-Link allreduce of the shards, all-gather)",
            "Streaming Memory: a machine's bandwidth shared by its IPUs, reads and writes in parallel,"
            " not overlapped with compute",
            f"syncs: every collective and inter-IPU exchange starts with a sync across the whole partition, costing"
            f" {self.sync_per_machine_s * 1e6:g} us per machine it spans in a Pod64, {self.gateway_sync_s * 1e6:g} us"
            " more across Pod64s (calibrated with the compute efficiency: vipu/jobs/calibration.py)",
            "optimiser update arithmetic and host I/O are not modelled (the calibration runs' share of them is"
            " inside the calibrated figures)",
        ]

    def gradient_description(self) -> str:
        if self.gradient_collectives == "buffered":
            return (f"in allreduces of at most {self.gradient_buffer_bytes / 2**20:g} MiB each (TensorFlow's"
                    " maximum_cross_replica_sum_buffer_size)")
        return "per tensor" if self.gradient_collectives == "per_tensor" else "fused into one allreduce per stage"

    def sync_s(self, pod, ipus: int) -> float:
        """One sync across a partition of `ipus` IPUs."""
        machines = -(-min(ipus, pod.ild_ipus) // pod.machine.ipus)
        return machines * self.sync_per_machine_s + (self.gateway_sync_s if ipus > pod.ild_ipus else 0.0)

    def gradient_collective_count(self, tensors: int, nbytes: float) -> int:
        """Allreduces that carry `nbytes` of gradients held in `tensors` tensors."""
        if self.gradient_collectives == "per_tensor":
            return tensors
        if self.gradient_collectives == "fused":
            return 1
        return max(1, math.ceil(nbytes / self.gradient_buffer_bytes))


# The assumptions of every prediction made for a job: `vipu plan SPEC`, the fit check of `vipu submit` and the
# prediction the job itself reports (train/runner.py) all plan with DEFAULT, so the three agree. It differs from
# Assumptions() in one field: a job's replicas allreduce each stage's gradients as one fused buffer, which is what
# the emulator runs (train/data_path.py: one allreduce of each IPU's flat gradient buffer) and what hardware.md's
# cost model states ("one gradient allreduce of S bytes per step"). Assumptions() keeps PopART's per-tensor default
# for the comparisons with published PopART runs (bench/bench_planner.py).
DEFAULT = Assumptions(gradient_collectives="fused")
