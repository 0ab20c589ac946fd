"""Times drawn at random for a trace that lacks them, or to replace its own: Poisson arrivals at an offered load
(`--arrivals poisson --load 0.8`) and run times from a distribution, a file of observed run times, or a column
(`--runtimes lognormal:6,1.5 | FILE | COLUMN`), all from one seed (`--seed`).

Why the load and not a rate: a rate means nothing without the Pod and the jobs; offered load = arrival rate x mean
IPU-seconds per job / the Pod's IPUs is what moves queueing figures, and 0.8 means the same on every trace. The mapping
line says the trace is synthetic and how its times were drawn, with the rate that came out.
"""

from __future__ import annotations

import csv
import math
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from vipu.errors import InvalidArgument
from vipu.replay.trace_rows import Trace, rounded_limit

DISTRIBUTIONS = "lognormal:MU,SIGMA (of ln seconds) or exponential:MEAN (seconds)"
RUNTIME_COLUMNS = ("run_time_s", "duration", "run_time", "runtime")  # a file's column of run times, first found


@dataclass(frozen=True)
class Draws:
    """How a trace's times are drawn: `arrivals` ("poisson" or None: the trace's own), `load`, `runtimes` (the
    --runtimes text, or None: the trace's own)."""

    arrivals: str | None = None
    load: float | None = None
    runtimes: str | None = None

    @property
    def random(self) -> bool:
        return self.arrivals is not None or (self.runtimes is not None and runtime_kind(self.runtimes) != "column")

    def check(self, generated: bool = False) -> None:
        """Refuse what no trace could use; `generated`: for --synthetic, whose arrivals come at --load."""
        if self.arrivals not in (None, "poisson"):
            raise InvalidArgument(f"--arrivals {self.arrivals!r} is not an arrival process; give poisson")
        if self.load is not None:
            if self.arrivals is None and not generated:
                raise InvalidArgument("--load goes with --arrivals poisson (the load its arrivals offer); give both")
            if not (math.isfinite(self.load) and self.load > 0):
                raise InvalidArgument(f"--load is {self.load}; give the offered load, more than 0 (0.8: 80% of the"
                                      " Pod's IPU-seconds asked for)")
        if self.runtimes is not None and runtime_kind(self.runtimes) == "distribution":
            distribution(self.runtimes)  # refused now, not after reading the trace


def runtime_kind(text: str) -> str:
    """'distribution', 'file' or 'column': what `--runtimes text` names."""
    if re.fullmatch(r"[a-z]+:.*", text) and not Path(text).is_file():
        return "distribution"
    return "file" if Path(text).is_file() else "column"


def distribution(text: str) -> tuple[str, Callable[[random.Random], float]]:
    """(its words, a draw) for `lognormal:MU,SIGMA` or `exponential:MEAN`."""
    name, _, params = text.partition(":")
    try:
        values = [float(v) for v in params.split(",")]
    except ValueError:
        values = []
    if name == "lognormal" and len(values) == 2 and all(map(math.isfinite, values)) and values[1] > 0:
        mu, sigma = values
        return (f"lognormal(mu={mu:g}, sigma={sigma:g}) s, median {math.exp(mu):.0f} s",
                lambda rng: rng.lognormvariate(mu, sigma))
    if name == "exponential" and len(values) == 1 and math.isfinite(values[0]) and values[0] > 0:
        mean = values[0]
        return f"exponential, mean {mean:g} s", lambda rng: rng.expovariate(1 / mean)
    raise InvalidArgument(f"--runtimes {text!r} is not a distribution; give {DISTRIBUTIONS}, a file of run times or a"
                          " column of the trace")


def observed(path: Path) -> list[float]:
    """Run times in seconds from a file: a CSV with a run_time_s, duration, run_time or runtime column (a jobs-out
    file has run_time_s), an openb pod list (deletion_time - scheduled_time of each task that ran), or one number per
    line."""
    shown = f"--runtimes {path}"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgument(f"{shown}: cannot read it ({e}); give a file of run times") from None
    lines = text.splitlines()
    header = next(csv.reader(lines[:1]), []) if lines else []
    values: list[float] = []
    column = next((c for c in RUNTIME_COLUMNS if c in header), None)
    try:
        if column is not None:
            values = [float(r[column]) for r in csv.DictReader(lines) if r.get(column)]
        elif {"deletion_time", "scheduled_time"} <= set(header):
            values = [float(r["deletion_time"]) - float(r["scheduled_time"]) for r in csv.DictReader(lines)
                      if r.get("deletion_time") and r.get("scheduled_time")]
        else:
            values = [float(line.split(",")[0]) for line in lines if line.strip() and not line.startswith("#")]
    except ValueError as e:
        raise InvalidArgument(f"{shown}: {e}; give numbers of seconds (a CSV with a {RUNTIME_COLUMNS[0]} or duration"
                              " column, an openb pod list, or one number per line)") from None
    values = [v for v in values if math.isfinite(v) and v >= 0]
    if not values:
        raise InvalidArgument(f"{shown} holds no run times; give a CSV with a run_time_s or duration column, an openb"
                              " pod list, or one number of seconds per line")
    return values


def drawn(trace: Trace, draws: Draws, seed: int, pod_ipus: int) -> Trace:
    """The trace with the times `draws` asks for drawn from `seed` (run times first, then arrivals, whose rate
    depends on them); a trace missing times that `draws` does not give is refused."""
    need = set(trace.missing)
    if "arrivals" in need and draws.arrivals is None:
        raise InvalidArgument("the trace has no arrival times (a pod list of resources only); give --arrivals poisson"
                              " --load 0.8 (and --runtimes if it has no run times either) to draw them")
    if "runtimes" in need and (draws.runtimes is None or runtime_kind(draws.runtimes) == "column"):
        raise InvalidArgument("the trace has no run times; give --runtimes lognormal:MU,SIGMA, exponential:MEAN or a"
                              " file of observed run times (an openb pod list with times will do)")
    rng = random.Random(seed)
    jobs, notes = list(trace.jobs), []
    if draws.runtimes is not None and runtime_kind(draws.runtimes) != "column":
        if runtime_kind(draws.runtimes) == "file":
            pool = observed(Path(draws.runtimes))
            draw, words = (lambda r: r.choice(pool)), f"drawn from the {len(pool)} in {draws.runtimes}"
        else:
            words, draw = distribution(draws.runtimes)
        durations = [max(1.0, draw(rng)) for _ in jobs]
        jobs = [replace(j, duration=d, time_limit=rounded_limit(d), trace_wait=None) for j, d in zip(jobs, durations)]
        notes.append(f"run times {words} (at least 1 s), time_limit = run time rounded up to a power-of-two number"
                     " of minutes")
    if draws.arrivals == "poisson":
        load = draws.load if draws.load is not None else 0.8
        work = sum(j.ipus * j.duration for j in jobs) / len(jobs) if jobs else 1.0
        if work == 0:  # every run is 0 s: no rate offers a load
            raise InvalidArgument(f"--arrivals poisson --load {load:g}: every job of the trace runs 0 s, so they"
                                  " offer no load at any arrival rate; give --runtimes to draw run times, or replay"
                                  " the trace's own arrivals (no --arrivals)")
        rate = load * pod_ipus / work  # jobs per second
        at, times = 0.0, []
        for _ in jobs:
            times.append(at)
            at += rng.expovariate(rate)
        jobs = [replace(j, submit_time=t, begin=None, trace_wait=None) for j, t in zip(jobs, times)]
        notes.append(f"arrivals Poisson in the trace's order at offered load {load:g} ({rate * 3600:.4g} jobs/h ="
                     f" {load:g} x {pod_ipus} IPUs / {work:.4g} mean IPU-seconds per job)")
    if not notes:
        return trace
    return replace(trace, jobs=jobs, mapping=f"{trace.mapping}; synthetic (seed {seed}): {'; '.join(notes)}",
                   missing=frozenset(), synthetic=True)
