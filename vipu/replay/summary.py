"""What a replay reports per policy: job completion times, waits, utilisation, fragmentation, and the table and
JSON `vipu simulate` prints them as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from vipu.replay.confidence import mean_and_halfwidth

if TYPE_CHECKING:
    from vipu.replay.simulation import Simulation


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    pod: str
    jobs: int
    finished: int
    unfinished: int
    avg_jct: float
    p50_jct: float
    p95_jct: float
    avg_wait: float
    p95_wait: float
    makespan: float
    utilisation: float  # IPU-seconds of running jobs / (Pod IPUs x makespan); preempted runs count (preempted_share)
    fragmentation: float  # share of the Pod's IPU-seconds that were free while jobs waited, yet too scattered for
    # the smallest waiting job that could start (free IPUs outside any free aligned block of its size; a job held,
    # not yet begun or waiting on a dependency could use none of them)
    timeouts: int
    preemptions: int
    cycles: int
    wall_seconds: float | None = None
    max_wait: float = 0.0  # the longest wait: starvation shows here first
    # what scheduling papers report (measures.py defines them)
    avg_bsld: float = 0.0
    p95_bsld: float = 0.0
    max_bsld: float = 0.0
    avg_slowdown: float = 0.0
    fairness: float = 1.0  # Jain's index over users' mean bounded slowdowns
    avg_queue: float = 0.0  # jobs waiting that may run, averaged over the makespan
    max_queue: int = 0
    bsld_threshold: float = 10.0
    # utilisation from the first submission to the last, where the drain after it (one long job's tail) does not
    # reach; None when every job arrives at once
    arrival_utilisation: float | None = None
    preempted_share: float = 0.0  # of utilisation, the Pod's IPU-seconds held by runs a preemption ended

    @property
    def jobs_per_second(self) -> float | None:
        return self.jobs / self.wall_seconds if self.wall_seconds else None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Column = tuple[str, str, Callable[[ReplayResult], float | str]]  # (heading, format spec, figure)
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
    ("arr util", ".1%", lambda r: "-" if r.arrival_utilisation is None else r.arrival_utilisation),
    ("frag", ".1%", lambda r: r.fragmentation),
    ("preempt", ".0f", lambda r: r.preemptions),
    ("jobs/s", ",.0f", lambda r: r.jobs_per_second or "-"),
)
# what scheduling papers report (measures.py): bounded slowdown, slowdown, fairness across users, queue length
PAPER_COLUMNS: tuple[Column, ...] = (
    ("policy", "<9", lambda r: r.policy),
    ("avg bsld", ".2f", lambda r: r.avg_bsld),
    ("p95 bsld", ".2f", lambda r: r.p95_bsld),
    ("max bsld", ".1f", lambda r: r.max_bsld),
    ("avg slowdown", ".2f", lambda r: r.avg_slowdown),
    ("fairness", ".3f", lambda r: r.fairness),
    ("avg queue", ".1f", lambda r: r.avg_queue),
    ("max queue", ".0f", lambda r: r.max_queue),
)


def _cell(values: Sequence, spec: str) -> str:
    """One figure, or over seeds its mean and 95% confidence half-width (mean±half)."""
    if isinstance(values[0], str):  # a name, or "-" for a figure not measured
        return format(values[0], spec) if spec.startswith("<") else values[0]
    if any(isinstance(v, str) for v in values):  # not measured over some seed
        return "-"
    if len(values) == 1:
        return format(values[0], spec)
    mean, half = mean_and_halfwidth(values)
    return format(mean, spec) if half == 0 else f"{format(mean, spec)}±{format(half, spec)}"


def format_table(results: Sequence[ReplayResult] | Sequence[Sequence[ReplayResult]],
                 columns: Sequence[Column] = COLUMNS) -> str:
    """A per-policy table: one row per policy, from its result, or from its results over seeds (a list each)."""
    groups = [r if isinstance(r, (list, tuple)) else [r] for r in results]
    rows = [[_cell([get(r) for r in group], spec) for _, spec, get in columns] for group in groups]
    widths = [max(len(name), *(len(row[i]) for row in rows)) if rows else len(name)
              for i, (name, _, _) in enumerate(columns)]
    lines = ["  ".join(name.rjust(w) if i else name.ljust(w) for i, ((name, _, _), w) in enumerate(zip(columns, widths)))]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def result_json(r: ReplayResult, sim: "Simulation | None" = None) -> dict:
    """One policy's figures for scripts: the tables', unrounded, with units in the key names; given the
    Simulation, also what the text output states on its first two lines (trace, skipped rows, mapping)."""
    out: dict = {"trace": sim.trace_path, "compress": sim.compression} if sim is not None else {}
    out.update(figures_json(r))
    if sim is not None:
        if sim.random:
            out["seed"] = sim.seeds[0]
        out["skipped"] = dict(sorted(sim.trace.skipped.items()))
        out["mapping"] = sim.trace.mapping
    return out


def figures_json(r: ReplayResult) -> dict:
    return {
        "policy": r.policy, "pod": r.pod, "jobs": r.jobs, "done": r.finished, "unfinished": r.unfinished,
        "avg_jct_s": r.avg_jct, "p50_jct_s": r.p50_jct, "p95_jct_s": r.p95_jct, "avg_wait_s": r.avg_wait,
        "p95_wait_s": r.p95_wait, "max_wait_s": r.max_wait, "makespan_s": r.makespan,
        "util_percent": 100 * r.utilisation,
        "arrival_util_percent": None if r.arrival_utilisation is None else 100 * r.arrival_utilisation,
        "preempted_util_percent": 100 * r.preempted_share, "frag_percent": 100 * r.fragmentation, "preemptions": r.preemptions,
        "timeouts": r.timeouts, "jobs_per_s": r.jobs_per_second,
        "avg_bsld": r.avg_bsld, "p95_bsld": r.p95_bsld, "max_bsld": r.max_bsld, "bsld_threshold_s": r.bsld_threshold,
        "avg_slowdown": r.avg_slowdown, "fairness_jain": r.fairness, "avg_queue": r.avg_queue,
        "max_queue": r.max_queue,
    }


def seeds_json(results: Sequence[ReplayResult], seeds: Sequence[int], sim: "Simulation") -> dict:
    """One policy's figures over seeds: each the mean, `ci95` its 95% confidence half-width, `per_seed` each
    seed's figures; and the first seed's trace, skipped rows and mapping."""
    runs = [figures_json(r) for r in results]
    out: dict = {"trace": sim.trace_path, "compress": sim.compression, "seeds": list(seeds)}
    half: dict = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and None not in values:
            out[key], half[key] = mean_and_halfwidth(values)
        else:
            out[key] = value
    out["ci95"] = half
    out["per_seed"] = [{"seed": seed, **run} for seed, run in zip(seeds, runs)]
    out["skipped"] = dict(sorted(sim.trace.skipped.items()))
    out["mapping"] = sim.trace.mapping
    return out
