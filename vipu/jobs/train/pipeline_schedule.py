"""How long a step's pipeline takes once every operation's duration is known: the built-in engine's timeline of the
schedules in vipu/sdk/nn/pipeline.py (gpipe and 1f1b; phased execution runs gpipe whatever the layout's schedule).

timeline() runs the ops event by event: an op starts when its stage is free and its input has arrived; the pipeline
time is the last op's end. Sends are part of the sending op's duration (BSP: an IPU computes or exchanges, never
both), so an input arrives when the op that sent it ends. A program's session charges the same times IPU by IPU
(vipu/jobs/sessions/ipu_clocks.py: a receive waits for its send), so the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from vipu.sdk.nn.pipeline import Op, dependency


@dataclass(frozen=True)
class Timeline:
    pipeline_s: float  # the last op's end
    busy_s: tuple[float, ...]  # per stage: the sum of its ops' durations

    @property
    def bubble_fraction(self) -> float:
        """The stages' average idle share of the pipeline time ((p-1)/(m+p-1) for balanced stages)."""
        if not self.pipeline_s:
            return 0.0
        return 1.0 - sum(self.busy_s) / (len(self.busy_s) * self.pipeline_s)


def timeline(order: list[Op], durations: dict[Op, float], p: int) -> Timeline:
    """Start every op (in `order`, which respects the dependencies) as soon as its stage and input allow."""
    free = [0.0] * p
    busy = [0.0] * p
    end: dict[Op, float] = {}
    for op in order:
        dep = dependency(op, p)
        start = max(free[op[0]], end[dep] if dep is not None else 0.0)
        end[op] = free[op[0]] = start + durations[op]
        busy[op[0]] += durations[op]
    return Timeline(max(end.values(), default=0.0), tuple(busy))
