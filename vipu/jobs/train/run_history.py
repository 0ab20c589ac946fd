"""What a training job's runs left, as `vipu logs` tells it: which run ended when, and a result's summary lines."""

from __future__ import annotations

import time

from vipu.jobs.train.results import USAGE_LEGEND, TrainingResult, usage_lines
from vipu.scheduler.job_states import JobState


def run_end(job, number: int) -> float | None:
    """When run `number` of the job left RUNNING, if it has."""
    starts = [i for i, t in enumerate(job.history) if t.state is JobState.RUNNING]
    if len(starts) < number or starts[number - 1] + 1 >= len(job.history):
        return None
    return job.history[starts[number - 1] + 1].at


def runs_ended(job) -> int:
    started = job.runs_started
    return started - 1 if job.state in (JobState.RUNNING, JobState.COMPLETING) else started


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
