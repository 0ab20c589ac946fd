"""Reading job traces for replay: the Alibaba openb GPU trace and a simple native CSV/JSONL format.

Why the mapping is spelled out in a string that is printed with every result: a GPU trace says nothing about IPUs,
so every figure from a replay depends on how GPU requests became IPU partitions; a reader of the numbers must see
the rule that produced them.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

from vipu.errors import InvalidArgument
from vipu.scheduler.durations import parse_duration

OPENB_COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time")
OPENB_ONLY = {"num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"}  # not in the native format
OPENB_QOS = {"BE": "low", "LS": "normal", "Burstable": "normal", "Guaranteed": "normal"}
IPUS_PER_GPU = 4


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


@dataclass
class Trace:
    jobs: list[TraceJob]
    mapping: str
    skipped: Counter = field(default_factory=Counter)  # why rows were left out -> how many

    def skipped_text(self) -> str:
        return ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"


def _csv_rows(reader: csv.DictReader, path: Path) -> Iterator[tuple[str, dict]]:
    """(FILE:LINE, row) for each row. A row with more or fewer fields than the header has columns is an error:
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
            yield where, row
    except csv.Error as e:
        raise InvalidArgument(f"{path}:{reader.line_num}: {e}; fix the row") from None


def _number(row: dict, column: str, where: str, kind=float):
    try:
        return kind(row[column])
    except (TypeError, ValueError):
        raise InvalidArgument(f"{where}: {column} is {row[column]!r}, not a number; fix the row") from None


def next_power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def rounded_limit(duration: float) -> float:
    """A user's time limit: the run time rounded up to a power-of-two number of minutes (at least 1 minute)."""
    minutes = max(1, math.ceil(duration / 60))
    return 60.0 * next_power_of_two(minutes)


def openb_mapping(ipus_per_gpu: int, compression: float) -> str:
    return (
        "openb -> IPU-Pod mapping: IPUs = next power of two of ceil(num_gpu x gpu_milli / 1000), x"
        f" {ipus_per_gpu} IPUs per GPU (a GPU ~ one IPU-Machine's {ipus_per_gpu} IPUs); arrival ="
        f" creation_time{'' if compression == 1 else f' / {compression:g}'}; run time = deletion_time -"
        " scheduled_time; time_limit = run time rounded up to a power-of-two number of minutes (so no TIMEOUTs);"
        " qos BE -> low, LS/Burstable/Guaranteed -> normal; one user (the trace has none); skipped: tasks with 0"
        " GPUs (CPU-only) and tasks never scheduled (no scheduled_time/deletion_time), and tasks larger than the"
        " Pod's largest partition"
    )


def read_openb(path: str | Path, ipus_per_gpu: int = IPUS_PER_GPU, compression: float = 1.0,
               max_ipus: int | None = None, limit: int | None = None) -> Trace:
    """The openb pod list (`openb_pod_list_*.csv`); `compression` divides arrival times (raising the load) and
    `limit` stops after that many rows (skipped rows included)."""
    skipped: Counter = Counter()
    jobs: list[TraceJob] = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in OPENB_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            columns = f"column {missing[0]} is" if len(missing) == 1 else f"columns {', '.join(missing)} are"
            raise InvalidArgument(f"{path}:1: is not an openb pod list: {columns} missing; an openb CSV has"
                                  f" {', '.join(OPENB_COLUMNS)} (docs/traces.md)")
        for where, row in _csv_rows(reader, Path(path)):
            if limit is not None and len(jobs) + sum(skipped.values()) >= limit:
                break
            gpus = _number(row, "num_gpu", where, int) if row["num_gpu"] else 0
            if gpus < 0:
                raise InvalidArgument(f"{where}: num_gpu is {gpus}, below 0; give the GPUs the task asked for (0 for"
                                      " a CPU-only task)")
            if row["qos"] not in OPENB_QOS:
                raise InvalidArgument(f"{where}: qos is {row['qos']!r}, not one of openb's {', '.join(OPENB_QOS)};"
                                      " fix the row")
            if gpus == 0:
                skipped["no GPU (CPU-only task)"] += 1
                continue
            if not row["scheduled_time"] or not row["deletion_time"]:
                skipped["never scheduled in the trace"] += 1
                continue
            milli = _number(row, "gpu_milli", where, int) if row["gpu_milli"] else 1000
            if not 0 < milli <= 1000:
                raise InvalidArgument(f"{where}: gpu_milli is {milli}, outside 1..1000; it is the share of each GPU in"
                                      " thousandths (1000 or empty: a whole GPU; num_gpu 0 for a CPU-only task)")
            ipus = next_power_of_two(math.ceil(gpus * milli / 1000)) * ipus_per_gpu
            if max_ipus is not None and ipus > max_ipus:
                skipped["larger than the Pod's largest partition"] += 1
                continue
            ran = _number(row, "deletion_time", where) - _number(row, "scheduled_time", where)
            if ran < 0:
                raise InvalidArgument(f"{where}: deletion_time is before scheduled_time; fix the row")
            duration = max(1.0, ran)
            jobs.append(TraceJob(
                submit_time=_number(row, "creation_time", where) / compression, ipus=ipus, duration=duration,
                time_limit=rounded_limit(duration), user="openb", qos=OPENB_QOS[row["qos"]],
                name=row["name"], source=where,
            ))
    return Trace(jobs, openb_mapping(ipus_per_gpu, compression), skipped)


NATIVE_MAPPING = (
    "native trace: submit_time and duration in seconds (or 1h30m-style), ipus as given, time_limit as given or"
    " the duration rounded up to a power-of-two number of minutes; user and qos as given (default user trace; default"
    " qos the scheduler config's default_qos, normal unless --scheduler-config sets another); begin (optional) the"
    " time on the trace's clock before which the job may not start"
)
NATIVE_COLUMNS = ("submit_time", "ipus", "duration", "time_limit", "user", "qos", "name", "begin")
REQUIRED = "give submit_time, ipus and duration on every row"
FORMS = "give an openb CSV or a native CSV or JSONL trace (docs/traces.md)"


def _check_columns(columns, where: str) -> None:
    unknown = [c for c in columns if c not in NATIVE_COLUMNS]
    if unknown:
        raise InvalidArgument(f"{where}: column {unknown[0]!r} is unknown; use {', '.join(NATIVE_COLUMNS)}")
    twice = [c for c, n in Counter(list(columns)).items() if n > 1]
    if twice:  # DictReader (and json.loads) would keep the last value and drop the others unseen
        raise InvalidArgument(f"{where}: column {twice[0]!r} is given more than once; give each column once")


def _pairs(pairs: list) -> dict:
    """json.loads' object hook: an object with a repeated key is refused in _native_job, not silently merged."""
    keys = [k for k, _ in pairs]
    row = dict(pairs)
    if len(row) != len(keys):
        row[_REPEATED] = [k for k, n in Counter(keys).items() if n > 1][0]
    return row


_REPEATED = object()  # the key under which _pairs notes a repeated key


def _ipus(value: object, column: str) -> int:
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        raise ValueError(f"{value!r} is not a whole number; write {int(value)}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not a whole number of IPUs; give a power of two such as 4")
    if value < 1:
        raise ValueError(f"{value} is not a number of IPUs; give a power of two such as 4")
    return value


def _seconds(value: object, column: str, positive: bool = False) -> float:
    """A time column: a number of seconds (a CSV cell holds it as text), or a duration with its unit."""
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", value):
        value = float(value)
    return parse_duration(value, column, positive)


def _limit(value: object, column: str) -> float:
    return _seconds(value, column, positive=True)


def _native_job(row: dict, where: str) -> TraceJob:
    if _REPEATED in row:
        raise InvalidArgument(f"{where}: key {row[_REPEATED]!r} is given more than once; give each key once")
    _check_columns(row, where)
    values = {c: v for c, v in row.items() if v not in (None, "")}  # an empty cell takes the default
    for column in NATIVE_COLUMNS[:3]:
        if column not in row:
            raise InvalidArgument(f"{where}: column {column} is missing; {REQUIRED}")
        if column not in values:
            raise InvalidArgument(f"{where}: {column} is empty; {REQUIRED}")

    def get(column: str, parse, default=None):
        if column not in values:
            return default
        try:
            return parse(values[column], column)
        except ValueError as e:  # pydantic's PydanticCustomError, from parse_duration, is a ValueError
            raise InvalidArgument(f"{where}: {column}: {e}") from None

    duration = get("duration", _seconds)
    return TraceJob(
        submit_time=get("submit_time", _seconds), ipus=get("ipus", _ipus), duration=duration,
        time_limit=get("time_limit", _limit, rounded_limit(duration)), user=str(values.get("user", "trace")),
        qos=str(values["qos"]) if "qos" in values else None, name=str(values.get("name", "job")),
        begin=get("begin", _seconds),
        source=where,
    )


def read_native(path: str | Path) -> Trace:
    """CSV with a header, or JSON lines (.jsonl, .ndjson), with submit_time, ipus, duration[, time_limit, user, qos,
    name, begin]; docs/traces.md describes them."""
    path = Path(path)
    jobs = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        if path.suffix in (".jsonl", ".ndjson"):
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line, object_pairs_hook=_pairs)
                except json.JSONDecodeError as e:
                    raise InvalidArgument(f"{path}:{n}: not JSON ({e.msg}); write one object per line, like"
                                          ' {"submit_time": 0, "ipus": 4, "duration": "10m"}') from None
                if not isinstance(row, dict):
                    raise InvalidArgument(f"{path}:{n}: a JSON {type(row).__name__}, not an object; write one object"
                                          ' per line, like {"submit_time": 0, "ipus": 4, "duration": "10m"}')
                jobs.append(_native_job(row, f"{path}:{n}"))
        else:
            reader = csv.DictReader(f)
            _check_columns(reader.fieldnames or [], f"{path}:1")
            jobs = [_native_job(row, where) for where, row in _csv_rows(reader, path)]
    return Trace(jobs, NATIVE_MAPPING)


def compressed(trace: Trace, compression: float) -> Trace:
    """Arrivals (and begin times) `compression` times closer together, counted from the first submission; run
    times and limits unchanged, so the load is `compression` times higher (`vipu simulate --compress`)."""
    if compression == 1 or not trace.jobs:
        return trace
    origin = min(j.submit_time for j in trace.jobs)

    def closer(t: float | None) -> float | None:
        return None if t is None else origin + (t - origin) / compression

    jobs = [replace(j, submit_time=closer(j.submit_time), begin=closer(j.begin)) for j in trace.jobs]
    return Trace(jobs, f"{trace.mapping}; arrivals and begin times {compression:g}x compressed: first submission"
                 f" + (time - first submission) / {compression:g}", trace.skipped)


def load_trace(path: str | Path, max_ipus: int | None = None, compression: float = 1.0, **openb_options) -> Trace:
    """openb if the CSV header says so (openb_options: ipus_per_gpu, limit), else the native format; `compression`
    brings arrivals that many times closer (openb: creation_time / compression, as its mapping says; native:
    compressed()). A trace with no job to replay is an error: its all-zero figures would look like a result."""
    path = Path(path)
    if not (isinstance(compression, (int, float)) and math.isfinite(compression) and compression > 0):
        raise InvalidArgument(f"--compress is {compression}; give a finite number more than 0 (4: arrivals 4x closer)")
    if not path.is_file():
        raise InvalidArgument(f"--trace {path} is not a readable file; {FORMS}")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = f.readline() if path.suffix == ".csv" else ""
        columns = next(csv.reader([header]), []) if header else []
        if set(columns) & OPENB_ONLY:  # openb's own columns: it is meant as openb, and read_openb names any missing
            trace = read_openb(path, max_ipus=max_ipus, compression=compression, **openb_options)
        else:
            trace = compressed(read_native(path), compression)
    except UnicodeDecodeError:
        raise InvalidArgument(f"--trace {path} is not UTF-8 text, so not a trace; {FORMS}") from None
    except OSError as e:
        raise InvalidArgument(f"--trace {path} cannot be read ({e.strerror}); {FORMS}") from None
    if not trace.jobs:
        skipped = f" (skipped: {trace.skipped_text()})" if trace.skipped else ""
        raise InvalidArgument(f"--trace {path} has no jobs to replay{skipped}; {FORMS}")
    return trace
