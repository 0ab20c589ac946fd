"""What a parallel training step cost and held (parallel.py runs it): its report (results.StepReport) and the
machines' counters charged with it.

Emulated time (results.py): each operation's BSP compute sets and collectives (work.py), the pipeline laid out
event by event from those durations (pipeline_schedule.timeline), then the data-parallel allreduce and the step's
streaming. The optimiser update and host I/O are not charged (the planner does not model them either). The step's
parts are those of its critical stage: the busiest stage of the slowest replica.

Streaming is charged once a step per machine as one duplex batch (hardware/streaming_cost.py duplex_s: one latency,
reads and writes in parallel at the machine's bandwidth), on the machines' own counters when the transport has
machines (record_streaming); the step's streaming_s is the busiest machine's. What each IPU reports holding (SRAM,
activations, Streaming Memory) is counted from the arrays the step keeps (holdings.py), and the machines are told it
each step (Fabric.hold): it is what they report for the job's IPUs, with their utilisation counters (`vipu top`).

A steady training loop's steps all cost the same: the timelines and the machines' steps are kept by their figures
and built once.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from vipu.jobs.memory_estimate import stash_bytes, state_bytes_per_param
from vipu.jobs.timing import streamed_bytes
from vipu.jobs.train.data_path import DP, PP, TP
from vipu.jobs.train.holdings import Holdings
from vipu.jobs.train.machine_charges import charge_compute, machine_streaming_s
from vipu.jobs.train.pipeline_schedule import Timeline, timeline
from vipu.jobs.train.results import IpuReport, StepReport
from vipu.jobs.train.work import kept_for

LINES_KEPT = 64  # distinct pipeline timelines kept per trainer (a steady loop has one per replica at most)
_charges: dict = {}  # Pod -> the machines' steps built on it so far (charge_compute's `built`)


class StepCosts:
    """A ParallelTrainer's accounting: what each IPU holds and streams, the pipeline's timeline, the step's report."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.lines: dict = {}  # the pipeline timelines laid out so far, by their ops' durations
        # the machines' steps built so far (charge_compute), by their figures, kept for every run on the Pod: a job
        # repeating an earlier one's figures hands the machines the same steps, priced already (Machine.run_step)
        self.charges = kept_for(_charges, trainer.pod)
        self.kept: dict[int, int] | None = None  # per IPU, the bytes SRAM keeps all step (holdings)
        self.last_ipus: tuple | None = None  # (the last step's figures, its IPUs' reports)

    def stored_weight_bytes(self, ipu: int) -> int:
        """The IPU's weights as stored between uses, in the model's dtype (memory_estimate.stored_weight_bytes)."""
        t = self.trainer
        lo, hi = t.owned_range(ipu) if t.lay.shards_weights else (0, t.layouts[ipu].size)
        return (hi - lo) * t.model.value_bytes

    def state_bytes(self, ipu: int) -> int:
        """The IPU's optimiser state as the Pod holds it: memory_estimate.py's bytes per parameter (fp32, an fp16
        model's master weights included) for the elements it owns."""
        lo, hi = self.trainer.owned_range(ipu)
        return (hi - lo) * state_bytes_per_param(self.trainer.workload)

    def streaming_s(self) -> float:
        """The step's streaming, each IPU's bytes as the Pod moves them (timing.streamed_bytes) batched per
        machine (train/machine_charges.py)."""
        t = self.trainer
        if not t.streamed:
            return 0.0
        stash = stash_bytes(t.workload) if t.lay.phased else 0.0
        return machine_streaming_s(t.fabric.transport, t.pod, {
            ipu: streamed_bytes(t.lay, self.stored_weight_bytes(ipu), self.state_bytes(ipu), stash)
            for ipu in t.ipus})

    def holdings(self) -> Holdings:
        """A step's count of what each IPU holds. In SRAM all step: its weights and accumulators in the model's
        dtype, and its optimiser state unless that streams; phased, only the resident block's weights and
        accumulators are in SRAM."""
        t = self.trainer
        value = t.model.value_bytes
        if self.kept is None:  # the same every step
            self.kept = {ipu: 2 * t.layouts[ipu].size * value + (0 if t.streamed else self.state_bytes(ipu))
                         for ipu in t.ipus}
        return Holdings.of_layouts(t.lay.phased, t.lay.t, value, self.kept, t.layouts)

    def timeline(self, timers: dict) -> Timeline:
        """The pipeline laid out from the ops' durations (timers in the step's order), once per distinct set of
        them."""
        totals = {timer: timer.total_s for timer in dict.fromkeys(timers.values())}  # stacked: one timer, m ops
        durations = tuple(map(totals.__getitem__, timers.values()))
        line = self.lines.get(durations)
        if line is None:
            if len(self.lines) >= LINES_KEPT:
                self.lines.clear()
            line = self.lines[durations] = timeline(self.trainer.order, dict(zip(timers, durations)),
                                                    self.trainer.lay.p)
        return line

    def report(self, step, losses, worst, dp_s, dp_sync, compute, held, started, streaming_s) -> StepReport:
        """The step's report from its critical stage (worst: its timeline, the stage, its timers) and the fabric's
        log; the machines are charged the step's compute and told what their IPUs hold."""
        t = self.trainer
        line, stage, timers = worst
        step_s = line.pipeline_s + dp_sync + dp_s + streaming_s
        compute_s = sum(timer.compute_s for timer in timers)
        tp_s = sum(timer.tensor_parallel_s for timer in timers)
        send_s = sum(timer.send_s for timer in timers)
        sync_s = sum(timer.sync_s for timer in timers) + dp_sync
        by_link: dict[str, int] = defaultdict(int)
        by_kind = {TP: 0, PP: 0, DP: 0}
        collectives = 0
        for kind, result, times in t.fabric.log:
            collectives += times
            for link, nbytes in result.bytes_per_link_type.items():
                by_link[link] += nbytes * times
                by_kind[kind] += nbytes * times
        figures = []
        for ipu in t.ipus:
            sram, activations = held.sram_peak(ipu)
            streamed = self.state_bytes(ipu) if t.streamed else 0  # the optimiser state
            if t.lay.phased:  # and weights and accumulators as stored, and the stashed block inputs
                streamed += 2 * self.stored_weight_bytes(ipu) + held.stash_bytes(ipu)
            figures.append((ipu, compute[ipu], int(sram), int(activations), int(streamed)))
        key = (step_s, tuple(figures))
        if self.last_ipus is None or self.last_ipus[0] != key:  # a steady loop's steps report the same figures
            per_ipu = {ipu: IpuReport(compute_s=seconds, utilisation=seconds / step_s if step_s else 0.0,
                                      memory_bytes=sram, activation_bytes=activations, streaming_bytes=streamed)
                       for ipu, seconds, sram, activations, streamed in figures}
            self.last_ipus = (key, per_ipu)
            # what the machines report their IPUs hold: told again only when it changes (they keep what they were told)
            t.fabric.hold("held", {ipu: (r.memory_bytes, r.streaming_bytes) for ipu, r in per_ipu.items()})
        per_ipu = self.last_ipus[1]
        # the machines' utilisation counters (`vipu top`): each IPU's compute, the rest of the step as exchange
        charge_compute(t.fabric.transport, t.pod, {ipu: r.compute_s for ipu, r in per_ipu.items()}, step_s,
                       "train step", t.model.dtype, self.charges)
        return StepReport(
            step=step, loss=float(np.concatenate(losses).mean()), emulated_step_s=step_s, compute_s=compute_s,
            comm_s=tp_s + send_s + dp_s, tensor_parallel_s=tp_s, pipeline_send_s=send_s, sync_s=sync_s,
            data_parallel_s=dp_s, streaming_s=streaming_s,
            bubble_s=line.pipeline_s - line.busy_s[stage], bubble_fraction=line.bubble_fraction,
            bytes_per_link_type=dict(by_link), bytes_per_kind=by_kind, collectives=collectives,
            ipus=per_ipu, wall_s=t.clock() - started)
