"""Each IPU's virtual time in a program's session, charged operation by operation with the engine's cost model.

Why per IPU: a program drives its IPUs one call at a time (one process may play many IPUs, several instances may
drive theirs at once), so time cannot be one clock. Each IPU has its own, and an operation starts when all the IPUs
it involves are free, as BSP makes them wait for one another:
- a compute set: its IPUs start at the latest of their clocks and end together, after the set's time (the busiest
  IPU's compute, then the sync: work.compute_set_times, the engine's OpTimer pricing);
- a collective: its members likewise, after a sync across the partition (the planner's assumptions.sync_s, which
  the engine charges before every collective) and the collective's alpha-beta time on the links;
- a send: the senders, likewise; its data arrives when they finish, and a receive starts the receivers at the later
  of their own time and that arrival (a pipeline stage waits for its input: the bubble). This is the engine's
  pipeline timeline (jobs/train/pipeline_schedule.py) run IPU by IPU, so a program that runs the engine's
  operations in each stage's order gets the engine's step time;
- Streaming Memory: the IPUs of a machine that move data wait for its duplex batch.
A step ends when the program reports it: its time is the latest clock, and every clock then starts the next step
together, at 0. What each IPU spent on what is kept per step, by the
planner's part names (compute, tensor-parallel, pipeline, data-parallel, sync, streaming) for the step report.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping

from vipu.jobs.train.data_path import DP, PP, TP

PARTS = ("compute", TP, PP, DP, "sync", "streaming")  # TP, PP, DP: the kinds of traffic a step reports


@dataclass(frozen=True)
class StepTime:
    """A step as the clocks saw it: its length, and per IPU its busy time by part and its own tile compute."""

    step_s: float
    busy: Mapping[int, Mapping[str, float]]
    own_compute_s: Mapping[int, float]


class IpuClocks:
    def __init__(self, ipus: Iterable[int]):
        self.now = {ipu: 0.0 for ipu in ipus}  # since the step began
        self._busy: dict[int, dict[str, float]] = {ipu: defaultdict(float) for ipu in self.now}
        self._own: dict[int, float] = defaultdict(float)

    def _together(self, ipus: Iterable[int], parts: Iterable[tuple[str, float]]) -> float:
        """The IPUs start together at the latest of their clocks and spend `parts` in order; returns the end."""
        ipus = list(ipus)
        end = max(self.now[ipu] for ipu in ipus)
        for part, seconds in parts:
            end += seconds
            for ipu in ipus:
                self._busy[ipu][part] += seconds
        for ipu in ipus:
            self.now[ipu] = end
        return end

    def compute_set(self, step_s: float, own_compute_s: Mapping[int, float]) -> float:
        """A compute set of the IPUs in own_compute_s (each IPU's own tile compute in it), lasting step_s."""
        for ipu, seconds in own_compute_s.items():
            self._own[ipu] += seconds
        return self._together(own_compute_s, [("compute", step_s)])

    def collective(self, ipus: Iterable[int], seconds: float, sync_s: float, part: str) -> float:
        """A collective (or a send) among `ipus`: a sync across the partition, then `seconds`. One that moved
        nothing (a group of one IPU) costs nothing, as in the engine. Returns its end."""
        ipus = list(ipus)
        if seconds <= 0:
            return max(self.now[ipu] for ipu in ipus)
        return self._together(ipus, [("sync", sync_s), (part, seconds)])

    def receive(self, ipus: Iterable[int], arrival: float) -> None:
        """The IPUs take data that arrived at `arrival`: none of them goes on before it."""
        for ipu in ipus:
            self.now[ipu] = max(self.now[ipu], arrival)

    def streaming(self, ipus: Iterable[int], seconds: float) -> float:
        return self._together(ipus, [("streaming", seconds)])

    def end_step(self) -> StepTime:
        """The step since the last one ended: its time and what each IPU spent. Every clock then starts the next
        step at 0, together (times within a step, as the engine's timeline counts them: the same sums, bit for
        bit, where the operations are the same)."""
        step = StepTime(max(self.now.values()), {ipu: dict(parts) for ipu, parts in self._busy.items()},
                        {ipu: self._own.get(ipu, 0.0) for ipu in self.now})
        for ipu in self.now:
            self.now[ipu] = 0.0
            self._busy[ipu] = defaultdict(float)
        self._own = defaultdict(float)
        return step
