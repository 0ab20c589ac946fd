"""What a job's runs left, as `vipu logs` tells it: which run ended when and how (a training run's or a user's
program's), and a training result's summary lines."""

from __future__ import annotations

import time

from typing import Callable

from vipu.jobs.train.results import USAGE_LEGEND, TrainingResult, usage_lines
from vipu.scheduler.job_states import TRANSITIONS, JobState


def run_end(job, number: int) -> float | None:
    """When run `number` of the job left RUNNING, if it has."""
    starts = [i for i, t in enumerate(job.history) if t.state is JobState.RUNNING]
    if len(starts) < number or starts[number - 1] + 1 >= len(job.history):
        return None
    return job.history[starts[number - 1] + 1].at


def runs_ended(job) -> int:
    started = job.runs_started
    return started - 1 if job.state in (JobState.RUNNING, JobState.COMPLETING) else started


def ending(job, number: int, cause: Callable[[JobState], str]) -> str | None:
    """How run `number` of the job ended, from its history, `cause` saying why it ended in a state (None while it
    runs): "run 1 ended NODE_FAIL at 2026-11-22T10:00:03: machine 1 was lost; requeued"."""
    starts = [i for i, t in enumerate(job.history) if t.state is JobState.RUNNING]
    if len(starts) < number:
        return None
    after = job.history[starts[number - 1] + 1: starts[number] if len(starts) > number else None]
    ends = [(i, t) for i, t in enumerate(after) if t.state is not JobState.COMPLETING]
    if not ends:
        return None
    i, end = ends[0]
    if end.state in (JobState.REQUEUED, JobState.PENDING):  # requeued while it ran (PENDING: an older record)
        return f"run {number} stopped at {stamp(end.at)}: requeued while it ran (vipu requeue)"
    requeued = i + 1 < len(after) and after[i + 1].state is JobState.PENDING
    said = f"run {number} ended {end.state.value} at {stamp(end.at)}: {cause(end.state)}"
    return f"{said}; requeued" if requeued else said


def cause(job, number: int, state: JobState) -> str:
    """Why run `number` ended in `state`, from the job's record alone: a preemption's, what ended its last run,
    else the state's own words."""
    if state is JobState.PREEMPTED and job.preemption:
        return job.preemption
    if job.ended_by and number == runs_ended(job):  # the job's record of what ended its last run
        return job.ended_by
    return TRANSITIONS[JobState.RUNNING][state]


def earlier_lines(job, number: int) -> list[str]:
    """One line per run of `job` before run `number`, from its history: a requeued job's runs before this one."""
    return [ending(job, n, lambda state, n=n: cause(job, n, state)) or f"run {n} ended" for n in range(1, number)]


def stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(at))


def result_lines(x: TrainingResult) -> list[str]:
    links = ", ".join(f"{k} {v:,} bytes" for k, v in sorted(x.bytes_per_link_type.items()) if v)
    lines = [
        f"{x.model} on {x.ipus} IPUs of {x.pod} ({x.layout}), {x.optimizer}, global batch {x.global_batch}:"
        f" {x.steps_run} of {x.steps_requested} steps{' (stopped early)' if x.stopped else ''}",
        f"emulated step time {x.emulated_step_s * 1e6:,.1f} us -> {x.throughput_samples_per_s:,.0f} samples/s"
        f" on the real Pod; the planner predicted {x.predicted_step_s * 1e6:,.1f} us"
        f" ({x.predicted_throughput_samples_per_s:,.0f} samples/s)",
        f"link traffic: {links or 'none'}",
    ]
    if x.modelled:  # nothing was emulated: say what the figures are
        lines[1:] = [f"modelled: the planner's predicted step time {x.predicted_step_s * 1e6:,.1f} us ->"
                     f" {x.predicted_throughput_samples_per_s:,.0f} samples/s on the real Pod; no loss",
                     "link traffic: not counted (modelled: no bytes moved)"]
    if x.ipu_usage:
        lines.append(f"per IPU over the {x.steps_run} steps ({USAGE_LEGEND}):")
        lines += usage_lines(x.ipu_usage)
    return [*lines, f"host wall-clock: {x.wall_s:.2f} s"]


def span(values: list[int]) -> str:
    """0-3 for a contiguous run, else the values."""
    if values and values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])
    return ",".join(map(str, values))
