"""What every trace reader produces (TraceJob, Trace) and the row checks they share.

Why the mapping is a string printed with every result: a GPU or CPU trace says nothing about IPUs, so every figure
from a replay depends on how its requests became IPU partitions (and, for a synthetic trace, how its times were
drawn); a reader of the numbers must see the rule that produced them.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from vipu.errors import InvalidArgument


@dataclass(frozen=True)
class TraceJob:
    submit_time: float
    ipus: int
    duration: float
    time_limit: float
    user: str = "trace"
    qos: str | None = None  # None: the scheduler config's default_qos, as for a submitted job
    name: str = "job"
    begin: float | None = None  # not eligible before this time on the trace's clock (sbatch --begin)
    source: str = "a trace row"  # FILE:LINE, for the errors a replay finds when it checks the job against the Pod
    line: int | None = None  # the line of the trace file it came from (a generated job's number): --jobs-out's
    # trace_line, since job ids follow submit order, not the file's
    trace_wait: float | None = None  # the wait its trace's own cluster gave it (recorded start - submit): the
    # baseline a replay's waits are read against; None where the format records none or the arrivals were changed


@dataclass
class Trace:
    jobs: list[TraceJob]
    mapping: str
    skipped: Counter = field(default_factory=Counter)  # why rows were left out -> how many
    # what the file does not give, to be drawn (arrivals.py): "arrivals" (no submit times), "runtimes" (no run
    # times); the jobs then hold 0.0 in its place until they are drawn
    missing: frozenset[str] = frozenset()
    synthetic: bool = False  # some of its times were drawn at random (a seed changes them)

    def skipped_text(self) -> str:
        return ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"


def csv_rows(reader: csv.DictReader, path: Path) -> Iterator[tuple[str, int, dict]]:
    """(FILE:LINE, LINE, row) for each row. A row with more or fewer fields than the header has columns is an error:
    DictReader would keep extra ones under the key None, where nobody reads them, and fill missing ones with None."""
    try:
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:
                raise InvalidArgument(f"{where}: more fields than the header's {len(reader.fieldnames)} columns;"
                                      " remove the extra ones (and quote a value that holds a comma)")
            if None in row.values():
                raise InvalidArgument(f"{where}: fewer fields than the header's {len(reader.fieldnames)} columns;"
                                      " give one value per column (an empty one for the default)")
            yield where, reader.line_num, row
    except csv.Error as e:
        raise InvalidArgument(f"{path}:{reader.line_num}: {e}; fix the row") from None


def number(row: dict, column: str, where: str, kind=float):
    try:
        value = kind(row[column])
    except (TypeError, ValueError):
        kind_words = "a whole number" if kind is int else "a number"  # 1.5 GPUs is a number, but not a count
        raise InvalidArgument(f"{where}: {column} is {row[column]!r}, not {kind_words}; fix the row") from None
    if kind is float and not math.isfinite(value):
        raise InvalidArgument(f"{where}: {column} is {row[column]!r}, not a finite number; fix the row")
    return value


def per_gpu(ipus_per_gpu: int) -> str:
    """How a GPU trace's GPUs became IPUs, as its mapping line says it."""
    if ipus_per_gpu == 4:
        return "x 4 IPUs per GPU (a GPU ~ one IPU-Machine's 4 IPUs)"
    return f"x {ipus_per_gpu} IPU{'s' if ipus_per_gpu > 1 else ''} per GPU (--ipus-per-gpu {ipus_per_gpu})"


def next_power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def rounded_limit(duration: float) -> float:
    """A user's time limit: the run time rounded up to a power-of-two number of minutes (at least 1 minute)."""
    minutes = max(1, math.ceil(duration / 60))
    return 60.0 * next_power_of_two(minutes)


def missing_columns(columns, wanted, path: Path, form: str) -> None:
    """Refuse a header without one of `wanted`, naming them and the format the file was taken for."""
    missing = [c for c in wanted if c not in (columns or [])]
    if missing:
        named = f"column {missing[0]} is" if len(missing) == 1 else f"columns {', '.join(missing)} are"
        raise InvalidArgument(f"{path}:1: is not {form}: {named} missing; {form} has {', '.join(wanted)}"
                              " (docs/traces.md)")
