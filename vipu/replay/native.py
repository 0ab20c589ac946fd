"""The native trace format: CSV with a header, or JSON lines, one job per row with its submit time, IPUs and run
time, and optionally its time limit, user, QOS, name and begin time (docs/traces.md)."""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.replay.trace_rows import Trace, TraceJob, csv_rows, rounded_limit
from vipu.scheduler.durations import parse_duration

NATIVE_MAPPING = (
    "native trace: submit_time and duration in seconds (or 1h30m-style), ipus as given, time_limit as given or"
    " the duration rounded up to a power-of-two number of minutes; user and qos as given (default user trace; default"
    " qos the scheduler config's default_qos, normal unless --scheduler-config sets another); begin (optional) the"
    " time on the trace's clock before which the job may not start"
)
NATIVE_COLUMNS = ("submit_time", "ipus", "duration", "time_limit", "user", "qos", "name", "begin")
REQUIRED = "give submit_time, ipus and duration on every row"


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


# a plain number as a CSV cell holds it, also as spreadsheets and numpy write large ones (1e3, 1.7e+09)
NUMBER = re.compile(r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*")


def _number(value: object, signed: bool = False) -> object:
    """A cell's plain number as a float; a negative duration stays text, for parse_duration's own words."""
    if isinstance(value, str) and NUMBER.fullmatch(value) and (signed or not value.strip().startswith("-")):
        return float(value)
    return value


def _seconds(value: object, column: str, positive: bool = False) -> float:
    """A duration column: a number of seconds, or a duration with its unit."""
    return parse_duration(_number(value), column, positive)


def _clock(value: object, column: str) -> float:
    """A time on the trace's clock (submit_time, begin): seconds from an origin of the trace's choosing, Unix time
    included, so not capped at a year as a duration is; or a duration from 0 (1h30m). Why not below 0: a begin time
    is a job spec's absolute time, which is never negative."""
    number = _number(value, signed=True)
    if not isinstance(number, (int, float)) or isinstance(number, bool):
        return parse_duration(number, column)
    try:
        seconds = float(number)
    except OverflowError:  # a JSON integer of hundreds of digits
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{value!r} is {'negative' if seconds < 0 else 'not a finite number'}; times on the trace's"
                         " clock are seconds of 0 or more (Unix time will do): add one offset to every time")
    return seconds


def _limit(value: object, column: str) -> float:
    return _seconds(value, column, positive=True)


def _native_job(row: dict, where: str, line: int) -> TraceJob:
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
        submit_time=get("submit_time", _clock), ipus=get("ipus", _ipus), duration=duration,
        time_limit=get("time_limit", _limit, rounded_limit(duration)), user=str(values.get("user", "trace")),
        qos=str(values["qos"]) if "qos" in values else None, name=str(values.get("name", "job")),
        begin=get("begin", _clock),
        source=where, line=line,
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
                jobs.append(_native_job(row, f"{path}:{n}", n))
        else:
            reader = csv.DictReader(f)
            _check_columns(reader.fieldnames or [], f"{path}:1")
            jobs = [_native_job(row, where, line) for where, line, row in csv_rows(reader, path)]
    return Trace(jobs, NATIVE_MAPPING)
