"""What a replay reports per policy: job completion times, waits, utilisation, fragmentation, and the table and
JSON `vipu simulate` prints them as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from vipu.replay.run import Simulation


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
    utilisation: float  # IPU-seconds of running jobs / (Pod IPUs x makespan)
    fragmentation: float  # share of the Pod's IPU-seconds that were free while jobs waited, yet too scattered for
    # the smallest waiting job that could start (free IPUs outside any free aligned block of its size; a job held,
    # not yet begun or waiting on a dependency could use none of them)
    timeouts: int
    preemptions: int
    cycles: int
    wall_seconds: float | None = None
    max_wait: float = 0.0  # the longest wait: starvation shows here first

    @property
    def jobs_per_second(self) -> float | None:
        return self.jobs / self.wall_seconds if self.wall_seconds else None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


COLUMNS = (
    ("policy", "{:<9}", lambda r: r.policy),
    ("jobs", "{:>6}", lambda r: r.jobs),
    ("done", "{:>6}", lambda r: r.finished),
    ("avg JCT s", "{:>10.0f}", lambda r: r.avg_jct),
    ("p50 JCT s", "{:>10.0f}", lambda r: r.p50_jct),
    ("p95 JCT s", "{:>10.0f}", lambda r: r.p95_jct),
    ("avg wait s", "{:>10.0f}", lambda r: r.avg_wait),
    ("p95 wait s", "{:>10.0f}", lambda r: r.p95_wait),
    ("max wait s", "{:>10.0f}", lambda r: r.max_wait),
    ("makespan s", "{:>11.0f}", lambda r: r.makespan),
    ("util", "{:>6.1%}", lambda r: r.utilisation),
    ("frag", "{:>6.1%}", lambda r: r.fragmentation),
    ("preempt", "{:>7}", lambda r: r.preemptions),
    ("jobs/s", "{:>8}", lambda r: f"{r.jobs_per_second:,.0f}" if r.jobs_per_second else "-"),
)


def format_table(results: Sequence[ReplayResult]) -> str:
    """The per-policy table a replay prints."""
    rows = [[fmt.format(get(r)) for _, fmt, get in COLUMNS] for r in results]
    widths = [max(len(name), *(len(row[i]) for row in rows)) if rows else len(name)
              for i, (name, _, _) in enumerate(COLUMNS)]
    lines = ["  ".join(name.rjust(w) if i else name.ljust(w) for i, ((name, _, _), w) in enumerate(zip(COLUMNS, widths)))]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def result_json(r: ReplayResult, sim: "Simulation | None" = None) -> dict:
    """One policy's figures for scripts: the table's, unrounded, with units in the key names; given the
    Simulation, also what the text output states on its first two lines (trace, skipped rows, mapping)."""
    out: dict = {"trace": sim.trace_path, "compress": sim.compression} if sim is not None else {}
    out.update({
        "policy": r.policy, "pod": r.pod, "jobs": r.jobs, "done": r.finished, "unfinished": r.unfinished,
        "avg_jct_s": r.avg_jct, "p50_jct_s": r.p50_jct, "p95_jct_s": r.p95_jct, "avg_wait_s": r.avg_wait,
        "p95_wait_s": r.p95_wait, "max_wait_s": r.max_wait, "makespan_s": r.makespan,
        "util_percent": 100 * r.utilisation, "frag_percent": 100 * r.fragmentation, "preemptions": r.preemptions,
        "timeouts": r.timeouts, "jobs_per_s": r.jobs_per_second,
    })
    if sim is not None:
        out["skipped"] = dict(sorted(sim.trace.skipped.items()))
        out["mapping"] = sim.trace.mapping
    return out


