"""The highest job id a controller handed out, as its database or its log shows it: what first_job_id must pass
after a restore (the README's restore steps), so that no id is given twice.

Why not the log's `job N submitted` lines alone: an array is one line, `jobs 5019_[0-4999] of root submitted`, and
its tasks take the ids from the array's on (5019 to 10018, scheduler.py's submit), so the count of its tasks is
part of the answer. Both log formats carry the same message (log_format.py), so one pattern reads text and JSON
lines, and lines with a prefix (journalctl's). A database is read as it is stored, read-only: the next id the
scheduler kept (scheduler_meta, committed with every submit), its jobs and its job history.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Iterable

from vipu.scheduler.job_record import META_NAME, SchedulerMeta

SQLITE_HEADER = b"SQLite format 3\x00"
# job 7 of bob submitted (4 IPUs) / job 26_5 of bob submitted (...) / jobs 5019_[0-4999] of root submitted (...)
SUBMITTED = re.compile(r"\bjobs? (\d+)(?:_(?:\[([0-9,:\-]+)\]|\d+))? of \S+ submitted \(")


def _tasks(span: str) -> int:
    """How many indices a span names as the log writes it (arrays.spans): 0-3,7,9-10, 0-4000000:1000."""
    count = 0
    for part in span.split(","):
        run, _, step = part.partition(":")
        first, _, last = run.partition("-")
        count += (int(last or first) - int(first)) // int(step or 1) + 1
    return count


def highest_logged(lines: Iterable[str]) -> int | None:
    """The highest job id the log's submitted lines say was given, or None if it has none."""
    highest = None
    for line in lines:
        for match in SUBMITTED.finditer(line):
            last = int(match.group(1)) + (_tasks(match.group(2)) if match.group(2) else 1) - 1
            highest = last if highest is None or last > highest else highest
    return highest


def highest_stored(path: Path) -> int | None:
    """The highest job id a controller's database gave (read-only, as it is on disk), or None if it gave none.
    A damaged next id is a ValueError (pydantic's, naming the field), read by the scheduler's own model."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:  # (a connection's `with` only commits)
        row = db.execute("SELECT doc FROM records WHERE kind = 'scheduler_meta' AND name = ?", (META_NAME,)).fetchone()
        given = [SchedulerMeta.model_validate_json(row[0]).next_job_id - 1] if row else []
        given += [r[0] for r in db.execute("SELECT MAX(CAST(name AS INTEGER)) FROM records WHERE kind = 'job'")]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "job_history" in tables:
            given += [r[0] for r in db.execute("SELECT MAX(id) FROM job_history")]
    given = [n for n in given if n is not None and n > 0]
    return max(given) if given else None


def highest_given(path: Path) -> int | None:
    """The highest job id the file shows given: a database (by its header) or a log."""
    with open(path, "rb") as f:
        if f.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
            return highest_stored(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        return highest_logged(f)
