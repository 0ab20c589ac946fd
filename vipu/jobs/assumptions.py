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
from vipu.sdk.nn.vector_cycles import SCORE_BACKWARD_CYCLES, SCORE_FORWARD_CYCLES

# `vipu plan`'s suggestions (suggest.py): among the fitting layouts predicted within this fraction of the best
# throughput, the micro-batch size nearest the spec's comes first (compute efficiency ignores micro-batch size)
NEAR_BEST = 0.05


class Assumptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    compute_efficiency: float = Field(
        0.3817, gt=0, le=1,
        description="fraction of peak FLOPS the IPU sustains on matrix multiplies (transformers, MLPs): fitted with"
        " the host figures below on published runs (vipu/jobs/calibration.py); the emulator computes at it too",
    )
    conv_efficiency: float = Field(
        0.4885, gt=0, le=1,
        description="fraction of peak FLOPS the IPU sustains on convolutions (ResNet-50): fitted with the host"
        " figures below on Graphcore's MLPerf v2.0 ResNet-50 runs on Bow Pod16/64/256 (vipu/jobs/calibration.py)",
    )
    score_forward_cycles: float = Field(
        SCORE_FORWARD_CYCLES, ge=0,
        description="tile cycles per attention score (heads x s^2 a sample and layer) in a layer's forward pass, on"
        " the vector units: scale, mask and softmax as PopART BERT runs them, at poplibs' cycle tables (sources in"
        " vipu/sdk/nn/kernels.py); the emulator's stage code charges the same",
    )
    score_backward_cycles: float = Field(
        SCORE_BACKWARD_CYCLES, ge=0,
        description="tile cycles per attention score in a layer's backward pass: the softmax's and the scale's"
        " gradients, at poplibs' cycle tables (vipu/sdk/nn/kernels.py)",
    )
    reserved_sram_fraction: float = Field(
        0.15, ge=0, lt=1,
        description="SRAM taken by compiled code, vertex state and exchange buffers before any tensor (assumption:"
        " not published; Poplar profiles of large models commonly show 10-25%)",
    )
    sync_per_machine_s: float = Field(
        0.5e-6, ge=0,
        description="what one sync costs per IPU-Machine it spans inside one IPU-Link domain (at most a Pod64's 16;"
        " Sync-Links run machine to machine). Every collective and inter-IPU exchange starts with a sync of the IPUs"
        " taking part: the whole partition for tensor-parallel, pipeline and gradient collectives, the pooling group"
        " for batch-norm statistics. Assumption: not published; of the order of an IPU-Link hop per machine",
    )
    gateway_sync_s: float = Field(
        5e-6, ge=0,
        description="what a sync costs on top per level of Pod64s it crosses (ceil(log2 of the Pod64s): the"
        " gateways relay it as a tree over GW-Links). Assumption: not published; one GW-Link latency (the preset's)"
        " a level",
    )
    host_bytes_per_s: float = Field(
        6.25e9, gt=0,
        description="what a machine's host connection carries: 2 x 25 GbE (the Bow Pod's accelerator_host_interconnect"
        " in Graphcore's MLPerf v2.0 system descriptions, mlcommons/training_results_v2.0 Graphcore/systems/"
        "ipu-pod64-TF1-closed.json: Broadcom 57414 Dual Port 10/25 GbE), shared by its IPUs",
    )
    host_call_s: float = Field(
        100e-6, ge=0,
        description="what one call from the hosts costs (Poplar's engine run: a round trip over the host network,"
        " the IPUs' sync with the hosts, the results back), once per layout.device_iterations steps. Assumption: not"
        " published; of the order of a RoCE round trip and a host-side call",
    )
    host_sync_per_doubling_s: float = Field(
        195.5e-6, ge=0,
        description="the sync with the hosts before every micro-batch's inputs, per doubling of the machines the job"
        " spans (poprun's hosts and the gateways agree on the stream copy). The shape is an assumption; the figure is"
        " fitted on the MLPerf ResNet-50 runs and BERT-Large on a Pod16 and a Pod64 (vipu/jobs/calibration.py)",
    )
    host_slowdown_per_doubling: float = Field(
        0.1969, ge=0,
        description="how much slower each machine's host input gets per doubling of the machines the job spans (the"
        " hosts' shared network and storage serve every machine's stream). The shape is an assumption; the figure"
        " is fitted with conv_efficiency on the MLPerf ResNet-50 runs (vipu/jobs/calibration.py)",
    )
    host_slowdown_per_pod64_level: float = Field(
        0.4972, ge=0,
        description="how much slower host input gets per level of Pod64s the job spans (ceil(log2 of the Pod64s))."
        " Fitted as host_slowdown_per_machine is; the MLPerf Pod128 run is held out to check the shape",
    )
    ild_collective: Literal["ring", "2d"] = Field(
        "ring",
        description="inside an IPU-Link domain: ring, 2(n-1) steps round the group (the issue's model); 2d,"
        " reduce-scatter round each machine's IPUs then along the machines, 2((c-1) + (n/c-1)) steps, same bytes",
    )

    def efficiency(self, model) -> float:
        """The fraction of peak FLOPS the model's compute runs at: its class's (convolutions or matrix multiplies)."""
        return self.conv_efficiency if model.kind == "resnet50" else self.compute_efficiency

    def lines(self) -> list[str]:
        """The assumptions as report lines, the fixed ones (not configurable here) included."""
        return [
            f"compute efficiency by what the model computes: matrix multiplies {self.compute_efficiency:.3f},"
            f" convolutions {self.conv_efficiency:.3f} of peak FLOPS (each fitted on published runs:"
            " vipu/jobs/calibration.py), the same for every micro-batch size: small micro-batches, which real IPUs"
            " run less efficiently (fewer samples to spread over the tiles), are predicted as fast per sample as large"
            " ones beyond their extra syncs and host transfers, so suggested layouts within"
            f" {NEAR_BEST:.0%} of the best predicted throughput list the micro-batch size nearest the spec's first",
            f"code and exchange buffers take {self.reserved_sram_fraction:.0%} of SRAM",
            "training FLOPs = 3 x forward (forward, backward for activations, backward for weights);"
            " 4 x with recomputation (phased execution always recomputes)",
            f"attention scores (heads x s^2 a sample and layer) scaled, masked and softmaxed on the vector units:"
            f" {self.score_forward_cycles:g} tile cycles a score forward (twice with recomputation),"
            f" {self.score_backward_cycles:g} backward (poplibs' cycle tables), not overlapped with the matmuls",
            "memory and time counted per pipeline stage on its layers: layers_per_stage where the layout gives it,"
            " else as the layers fall (an embedding takes layers off the first stage); the fullest stage decides the"
            " fit; the embedding and tied head on the first stage; MLP and ResNet-50 stages timed as balanced"
            " (1/(t p) of the FLOPs each)",
            "tile mapping: each tensor linear over the compute tiles (all but io_tiles) from tile 0 in"
            f" {MAPPING_GRAIN}-byte grains, the fullest tile deciding; the largest block's activations of one micro-batch as matmul"
            " temporaries, at most available_memory_proportion of a tile (vipu/jobs/tile_memory.py)",
            "available_memory_proportion caps the matmul temporaries' memory only: a lower value costs no time here,"
            " where poplin would plan a matmul slower under a tighter cap (bench/planner_sl512.py prices that as a"
            " diagnostic, but its accounting finds no plan for BERT-Base configs that ran, so it is not used)",
            "io_tiles take tiles, and their SRAM and FLOPs, from the model and do nothing else here: host I/O and"
            " Streaming Memory transfers are not overlapped with compute on them (PopXL's reason for them)",
            "data-parallel gradients reduced after the last micro-batch as the layout's gradient_reduction says, not"
            " overlapped with compute (BSP: an IPU computes or exchanges, never both)",
            "IPU numbering: tensor shards innermost, then pipeline stages, then replicas (t IPUs of a shard group"
            " are adjacent; replicas are t x p IPUs apart)",
            f"collectives: {self.ild_collective} alpha-beta on the preset's link figures; inside an IPU-Link"
            " domain 4 directed rings on a whole torus Pod64, 2 on smaller groups or a mesh, 1 for 2 IPUs; across"
            " Pod64s hierarchical (reduce-scatter, GW-Link allreduce of the shards, all-gather); replicas t x p"
            " IPUs apart on the emulator's strided schedule inside a Pod64, their groups sharing its links",
            "Streaming Memory: a machine's bandwidth shared by its IPUs, reads and writes in parallel,"
            " not overlapped with compute",
            f"syncs: every collective and inter-IPU exchange starts with a sync of the IPUs taking part, costing"
            f" {self.sync_per_machine_s * 1e6:g} us per machine spanned in a Pod64 and {self.gateway_sync_s * 1e6:g} us"
            " per level of Pod64s (assumptions, not published)",
            f"host I/O: a call from the hosts every device_iterations steps ({self.host_call_s * 1e6:g} us,"
            " assumption); every micro-batch's inputs come from the hosts after a sync with them"
            f" ({self.host_sync_per_doubling_s * 1e6:.0f} us per doubling of the machines spanned, fitted), at"
            f" {self.host_bytes_per_s / 1e9:g} GB/s a machine (documented),"
            f" {self.host_slowdown_per_doubling:.3f} slower per doubling of the machines and"
            f" {self.host_slowdown_per_pod64_level:.3f} per level of Pod64s spanned (fitted), not overlapped with"
            " compute",
            "optimiser update arithmetic is not modelled",
        ]

    def sync_s(self, pod, ipus: int) -> float:
        """One sync across `ipus` contiguous IPUs: per machine spanned inside a Pod64, and per level of a tree over
        the Pod64s spanned."""
        return machines_spanned(pod, min(ipus, pod.ild_ipus)) * self.sync_per_machine_s + pod64_levels(pod, ipus) * self.gateway_sync_s

    def host_sync_s(self, pod, ipus: int) -> float:
        """The sync with the hosts before a micro-batch's inputs, for a job spanning `ipus` IPUs."""
        return self.host_sync_per_doubling_s * math.log2(machines_spanned(pod, ipus))

    def host_slowdown(self, pod, ipus: int) -> float:
        """How much longer the hosts take to feed a machine of a job spanning `ipus` IPUs than of one machine."""
        return (1 + self.host_slowdown_per_doubling * math.log2(machines_spanned(pod, ipus))
                + self.host_slowdown_per_pod64_level * pod64_levels(pod, ipus))


def machines_spanned(pod, ipus: int) -> int:
    return -(-ipus // pod.machine.ipus)


def pod64_levels(pod, ipus: int) -> int:
    """Levels of a binary tree over the IPU-Link domains (Pod64s) `ipus` IPUs span: 0 inside one."""
    domains = -(-ipus // pod.ild_ipus)
    return math.ceil(math.log2(domains)) if domains > 1 else 0


# The assumptions of every prediction made for a job: `vipu plan SPEC`, the fit check of `vipu submit`, the
# prediction the job itself reports (train/runner.py) and bench/bench_planner.py all plan with DEFAULT.
DEFAULT = Assumptions()
