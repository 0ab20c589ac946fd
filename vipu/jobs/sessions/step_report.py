"""A program's step as `vipu logs`, `vipu show job`, `vipu top` and the metrics show built-in training's: the same
StepReport (vipu/jobs/train/results.py), built from the session's clocks instead of the engine's timeline.

- emulated_step_s: the step's time on the IPU clocks (ipu_clocks.py);
- its parts on the critical IPU, the one busiest in the step (the engine's critical stage: the busiest stage of the
  slowest replica): compute sets, tensor-parallel collectives (a collective inside one replica), pipeline sends,
  data-parallel collectives (across replicas), syncs, Streaming Memory; bubble_s is the rest of its step (waiting),
  bubble_fraction the IPUs' average idle share (the engine's, for a pipeline without data parallelism);
- link bytes per link type and per kind, from the collectives' results;
- per IPU: its own tile compute and its share of the step (utilisation), and what the program held at the step's
  SRAM peak: tile SRAM (activation_bytes: the part of it reserved, e.g. activations a program keeps on the host),
  and Streaming Memory. These are the program's own tensors, not the engine's count of what the Pod would hold.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from vipu.fabric.schedule_cost import CollectiveResult
from vipu.jobs.sessions.ipu_clocks import StepTime
from vipu.jobs.train.data_path import DP, PP, TP
from vipu.jobs.train.results import IpuReport, StepReport

def step_report(step: int, loss: float, time: StepTime, log: Sequence[tuple[str, CollectiveResult]],
                held: Mapping[int, tuple[int, int, int]], wall_s: float) -> StepReport:
    """`log`: (kind, result) of every collective and send of the step, kind TP, PP or DP; held[ipu]: (SRAM at its peak, of it
    reserved, Streaming Memory) in the step."""
    step_s = time.step_s

    def total(ipu: int) -> float:
        return sum(time.busy[ipu].values())

    critical = min(time.busy, key=lambda ipu: (-total(ipu), ipu))
    parts = defaultdict(float, time.busy[critical])
    tp, send, dp = parts[TP], parts[PP], parts[DP]
    by_link: dict[str, int] = defaultdict(int)
    by_kind = {TP: 0, PP: 0, DP: 0}
    for part, result in log:
        for link, nbytes in result.bytes_per_link_type.items():
            by_link[link] += nbytes
            by_kind[part] += nbytes
    idle = [max(0.0, step_s - total(ipu)) / step_s for ipu in time.busy] if step_s else [0.0]
    ipus = {}
    for ipu in sorted(time.busy):
        sram, reserved, streaming = held.get(ipu, (0, 0, 0))
        own = time.own_compute_s.get(ipu, 0.0)
        ipus[ipu] = IpuReport(compute_s=own, utilisation=own / step_s if step_s else 0.0, memory_bytes=sram,
                              activation_bytes=reserved, streaming_bytes=streaming)
    return StepReport(
        step=step, loss=loss, emulated_step_s=step_s, compute_s=parts["compute"], comm_s=tp + send + dp,
        tensor_parallel_s=tp, pipeline_send_s=send, sync_s=parts["sync"], data_parallel_s=dp,
        streaming_s=parts["streaming"], bubble_s=max(0.0, step_s - total(critical)),
        bubble_fraction=sum(idle) / len(idle), bytes_per_link_type=dict(by_link), bytes_per_kind=by_kind,
        collectives=len(log), ipus=ipus, wall_s=wall_s)
