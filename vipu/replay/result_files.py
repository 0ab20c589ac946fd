"""The files a replay writes for analysis: one row per job and policy (`--jobs-out`), and the Pod's state after
every step (`--series-out`), as CSV or JSON lines by the file's extension."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable

from vipu.errors import InvalidArgument
from vipu.replay.measures import JOB_COLUMNS, SERIES_COLUMNS

KINDS = (".csv", ".jsonl", ".ndjson")


def check_path(path: str, flag: str) -> Path:
    """Refuse an extension that says neither format, or a folder that does not exist, before replaying anything."""
    out = Path(path)
    if out.suffix.lower() not in KINDS:
        raise InvalidArgument(f"{flag} {path}: name a .csv or .jsonl file (the extension says the format)")
    if not out.parent.is_dir():
        raise InvalidArgument(f"{flag} {path}: folder {out.parent} does not exist; create it or name another")
    return out


def write_rows(path: Path, columns: tuple[str, ...], rows: Iterable[dict]) -> int:
    """Write `rows` (dicts with `columns`) to `path`; returns how many. CSV leaves an unknown value (None) empty."""
    n = 0
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            if path.suffix.lower() == ".csv":
                writer = csv.DictWriter(f, fieldnames=columns)
                writer.writeheader()
                for row in rows:
                    writer.writerow(row)
                    n += 1
            else:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
                    n += 1
    except OSError as e:
        raise InvalidArgument(f"cannot write {path} ({e.strerror}); name a file you may write") from None
    return n


def job_rows(sim) -> Iterable[dict]:
    """Every job of every replay: policies in the order asked for, seeds in order, jobs by id."""
    for per_policy in sim.runs:
        for seed, run in zip(sim.seeds, per_policy):
            for job, line, waited in zip(run.jobs, run.trace_lines, run.trace_waits):
                yield job.row(run.result.policy, seed, line, waited)


def series_rows(sim) -> Iterable[dict]:
    for per_policy in sim.runs:
        for seed, run in zip(sim.seeds, per_policy):
            yield from run.series.rows(run.result.policy, seed, sim.pod.ipus)


def write_jobs(sim, path: Path) -> int:
    return write_rows(path, JOB_COLUMNS, job_rows(sim))


def write_series(sim, path: Path) -> int:
    return write_rows(path, SERIES_COLUMNS, series_rows(sim))
