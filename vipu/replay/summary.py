"""What a replay reports per policy: job completion times, waits, utilisation, fragmentation, and the table and
JSON `vipu simulate` prints them as."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from vipu.replay.confidence import mean_and_halfwidth

if TYPE_CHECKING:
    from vipu.replay.simulation import Simulation


@dataclass(frozen=True)
class ReplayResult:
    """One policy's figures. A figure over nothing (an average of no jobs, a share of a makespan of 0 s) is None:
    undefined, printed `-` (JSON null), since a 0 there would read as a measured value."""

    policy: str
    pod: str
    jobs: int
    finished: int
    unfinished: int
    avg_jct: float | None
    p50_jct: float | None
    p95_jct: float | None
    avg_wait: float | None
    p95_wait: float | None
    makespan: float | None  # None: no job
    utilisation: float | None  # IPU-seconds of running jobs / (Pod IPUs x makespan); preempted runs count
    # (preempted_share)
    fragmentation: float | None  # share of the Pod's IPU-seconds that were free while jobs waited, yet too
    # scattered for the smallest waiting job that could start (free IPUs outside any free aligned block of its size;
    # a job held, not yet begun or waiting on a dependency could use none of them)
    timeouts: int
    preemptions: int
    cycles: int
    wall_seconds: float | None = None
    max_wait: float | None = None  # the longest wait: starvation shows here first
    # what scheduling papers report (measures.py defines them)
    avg_bsld: float | None = None
    p95_bsld: float | None = None
    max_bsld: float | None = None
    avg_slowdown: float | None = None  # over the jobs whose slowdown is defined (a run of 0 s has none)
    fairness: float | None = None  # Jain's index over users' mean bounded slowdowns
    avg_queue: float | None = None  # jobs waiting that may run, averaged over the makespan
    max_queue: int | None = None
    bsld_threshold: float = 10.0
    # utilisation from the first submission to the last, where the drain after it (one long job's tail) does not
    # reach; None when every job arrives at once
    arrival_utilisation: float | None = None
    preempted_share: float | None = None  # of utilisation, the Pod's IPU-seconds held by runs a preemption ended

    @property
    def jobs_per_second(self) -> float | None:
        return self.jobs / self.wall_seconds if self.wall_seconds else None


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least q of the values at or below it (None over
    none). It was the value one rank higher whenever q x n is whole: the p50 of two jobs was the longer one, and
    the p95 of 20 their maximum."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(round(q * len(ordered), 9)) - 1)]


Column = tuple[str, str, Callable[[ReplayResult], float | str | None]]  # (heading, format spec, figure: None
# when undefined, printed "-")
COLUMNS: tuple[Column, ...] = (
    ("policy", "<9", lambda r: r.policy),
    ("jobs", ".0f", lambda r: r.jobs),
    ("done", ".0f", lambda r: r.finished),
    ("avg JCT s", ".0f", lambda r: r.avg_jct),
    ("p50 JCT s", ".0f", lambda r: r.p50_jct),
    ("p95 JCT s", ".0f", lambda r: r.p95_jct),
    ("avg wait s", ".0f", lambda r: r.avg_wait),
    ("p95 wait s", ".0f", lambda r: r.p95_wait),
    ("max wait s", ".0f", lambda r: r.max_wait),
    ("makespan s", ".0f", lambda r: r.makespan),
    ("util", ".1%", lambda r: r.utilisation),
    ("arr util", ".1%", lambda r: r.arrival_utilisation),
    ("frag", ".1%", lambda r: r.fragmentation),
    ("preempt", ".0f", lambda r: r.preemptions),
    ("jobs/s", ",.0f", lambda r: r.jobs_per_second),
)
# what scheduling papers report (measures.py): bounded slowdown, slowdown, fairness across users, queue length.
# Columns of one kind share a format, so a max never prints below its p95 (max 1.2 beside p95 1.23 did)
PAPER_COLUMNS: tuple[Column, ...] = (
    ("policy", "<9", lambda r: r.policy),
    ("avg bsld", ".2f", lambda r: r.avg_bsld),
    ("p95 bsld", ".2f", lambda r: r.p95_bsld),
    ("max bsld", ".2f", lambda r: r.max_bsld),
    ("avg slowdown", ".2f", lambda r: r.avg_slowdown),
    ("fairness", ".3f", lambda r: r.fairness),
    ("avg queue", ".1f", lambda r: r.avg_queue),
    ("max queue", ".0f", lambda r: r.max_queue),
)


def _cell(values: Sequence, spec: str, signed: bool = False) -> str:
    """One figure, or over seeds its mean and 95% confidence half-width (mean±half); "-" for one undefined (None)
    over any seed; `signed`: a difference, its mean with its sign."""
    if isinstance(values[0], str):  # a name
        return format(values[0], spec)
    if any(v is None for v in values):
        return "-"
    mean, half = mean_and_halfwidth(values)
    shown = format(mean, ("+" if signed else "") + spec)
    return shown if half == 0 else f"{shown}±{format(half, spec)}"


def format_table(results: Sequence[ReplayResult] | Sequence[Sequence[ReplayResult]],
                 columns: Sequence[Column] = COLUMNS) -> str:
    """A per-policy table: one row per policy, from its result, or from its results over seeds (a list each)."""
    groups = [r if isinstance(r, (list, tuple)) else [r] for r in results]
    rows = [[_cell([get(r) for r in group], spec) for _, spec, get in columns] for group in groups]
    return _layout([name for name, _, _ in columns], rows)


def _layout(headings: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(name), *(len(row[i]) for row in rows)) if rows else len(name)
              for i, name in enumerate(headings)]
    lines = ["  ".join(name.rjust(w) if i else name.ljust(w) for i, (name, w) in enumerate(zip(headings, widths)))]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


# the figures compared seed by seed (paired_table): their headings in the two tables above, and their JSON keys
PAIRED = (("avg JCT s", "avg_jct_s"), ("avg wait s", "avg_wait_s"), ("p95 wait s", "p95_wait_s"),
          ("max wait s", "max_wait_s"), ("util", "util_percent"), ("frag", "frag_percent"), ("avg bsld", "avg_bsld"),
          ("fairness", "fairness_jain"), ("avg queue", "avg_queue"))


def _differences(group: Sequence, base: Sequence, get: Callable) -> list | None:
    """A figure of one policy minus the first policy's, seed by seed; None when undefined in any seed."""
    pairs = [(get(r), get(b)) for r, b in zip(group, base)]
    return None if any(x is None or y is None for x, y in pairs) else [x - y for x, y in pairs]


def paired_table(groups: Sequence[Sequence[ReplayResult]]) -> str:
    """Over seeds, each policy's figures minus the first policy's in the same seed (mean±95% half-width). Why: the
    policies replay the same seeds, so a difference varies less than either figure (both move with a seed's load),
    and its interval says whether two policies differ where the two intervals of the tables above overlap."""
    columns = {name: (spec, get) for name, spec, get in (*COLUMNS, *PAPER_COLUMNS)}
    rows = [[group[0].policy] + [_cell(_differences(group, groups[0], columns[name][1]) or [None], columns[name][0],
                                       signed=True) for name, _ in PAIRED] for group in groups[1:]]
    return _layout([f"minus {groups[0][0].policy}", *(name for name, _ in PAIRED)], rows)


def result_json(r: ReplayResult, sim: "Simulation | None" = None) -> dict:
    """One policy's figures for scripts: the tables', unrounded, with units in the key names; given the
    Simulation, also what the text output states above its tables (trace, skipped rows, mapping, scheduler
    config)."""
    out: dict = {"trace": sim.trace_path, "compress": sim.compression} if sim is not None else {}
    out.update(figures_json(r))
    if sim is not None:
        if sim.random:
            out["seed"] = sim.seeds[0]
        out.update(_origin(sim))
    return out


def _origin(sim: "Simulation") -> dict:
    """What the figures come from besides the policy: the trace's skipped rows, its mapping, the scheduler config
    (null: the built-in one; else its file and its fields not at their defaults), and the waits the trace recorded
    (null: none)."""
    config = {"file": sim.config_file, "non_default": sim.config_changes} if sim.config_file else None
    return {"skipped": dict(sorted(sim.trace.skipped.items())), "mapping": sim.trace.mapping,
            "scheduler_config": config, "trace_waits": trace_waits(sim.trace.jobs)}


def trace_waits(jobs: Sequence) -> dict | None:
    """The waits the trace's own cluster gave its jobs (TraceJob.trace_wait), the baseline a replay's are read
    against: how many jobs have one, and their average, p95 and maximum; None when none has."""
    waits = [j.trace_wait for j in jobs if j.trace_wait is not None]
    if not waits:
        return None
    return {"jobs": len(waits), "avg_wait_s": sum(waits) / len(waits), "p95_wait_s": percentile(waits, 0.95),
            "max_wait_s": max(waits)}


def figures_json(r: ReplayResult) -> dict:
    return {
        "policy": r.policy, "pod": r.pod, "jobs": r.jobs, "done": r.finished, "unfinished": r.unfinished,
        "avg_jct_s": r.avg_jct, "p50_jct_s": r.p50_jct, "p95_jct_s": r.p95_jct, "avg_wait_s": r.avg_wait,
        "p95_wait_s": r.p95_wait, "max_wait_s": r.max_wait, "makespan_s": r.makespan,
        "util_percent": _percent(r.utilisation), "arrival_util_percent": _percent(r.arrival_utilisation),
        "preempted_util_percent": _percent(r.preempted_share), "frag_percent": _percent(r.fragmentation),
        "preemptions": r.preemptions,
        "timeouts": r.timeouts, "jobs_per_s": r.jobs_per_second,
        "avg_bsld": r.avg_bsld, "p95_bsld": r.p95_bsld, "max_bsld": r.max_bsld, "bsld_threshold_s": r.bsld_threshold,
        "avg_slowdown": r.avg_slowdown, "fairness_jain": r.fairness, "avg_queue": r.avg_queue,
        "max_queue": r.max_queue,
    }


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def seeds_json(results: Sequence[ReplayResult], seeds: Sequence[int], sim: "Simulation",
               base: Sequence[ReplayResult] | None = None) -> dict:
    """One policy's figures over seeds: each the mean, `ci95` its 95% confidence half-width, `per_seed` each
    seed's figures; and the first seed's trace, skipped rows, mapping and scheduler config. A figure undefined over
    any seed is null, as the table prints it `-` (a mean over the other seeds would pass for the mean over all)."""
    runs = [figures_json(r) for r in results]
    out: dict = {"trace": sim.trace_path, "compress": sim.compression, "seeds": list(seeds)}
    half: dict = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        if None in values:
            out[key] = None
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key], half[key] = mean_and_halfwidth(values)
        else:
            out[key] = value
    out["ci95"] = half
    out["per_seed"] = [{"seed": seed, **run} for seed, run in zip(seeds, runs)]
    if base is not None:  # paired_table's figures, seed by seed against the first policy's
        first = [figures_json(r) for r in base]
        differences = {key: _differences(runs, first, lambda run: run[key]) for _, key in PAIRED}
        out["paired"] = {"minus": base[0].policy,
                         **{key: None if d is None else dict(zip(("mean", "ci95"), mean_and_halfwidth(d)))
                            for key, d in differences.items()}}
    out.update(_origin(sim))
    return out
