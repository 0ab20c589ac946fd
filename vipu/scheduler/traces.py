"""Reading job traces for replay: the Alibaba openb GPU trace and a simple native CSV/JSONL format.

Why the mapping is spelled out in a string that is printed with every result: a GPU trace says nothing about IPUs,
so every figure from a replay depends on how GPU requests became IPU partitions; a reader of the numbers must see
the rule that produced them.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from vipu.errors import InvalidArgument
from vipu.scheduler.durations import parse_duration

OPENB_COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time")
IPUS_PER_GPU = 4


@dataclass(frozen=True)
class TraceJob:
    submit_time: float
    ipus: int
    duration: float
    time_limit: float
    user: str = "trace"
    qos: str = "normal"
    name: str = "job"
    begin: float | None = None  # not eligible before this time on the trace's clock (sbatch --begin)


@dataclass
class Trace:
    jobs: list[TraceJob]
    mapping: str
    skipped: Counter = field(default_factory=Counter)  # why rows were left out -> how many


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
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in OPENB_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InvalidArgument(f"{path} is not an openb pod list: columns {', '.join(missing)} are missing")
        for row in reader:
            if limit is not None and len(jobs) + sum(skipped.values()) >= limit:
                break
            gpus = int(row["num_gpu"] or 0)
            if gpus == 0:
                skipped["no GPU (CPU-only task)"] += 1
                continue
            if not row["scheduled_time"] or not row["deletion_time"]:
                skipped["never scheduled in the trace"] += 1
                continue
            ipus = next_power_of_two(math.ceil(gpus * int(row["gpu_milli"] or 1000) / 1000)) * ipus_per_gpu
            if max_ipus is not None and ipus > max_ipus:
                skipped["larger than the Pod's largest partition"] += 1
                continue
            duration = max(1.0, float(row["deletion_time"]) - float(row["scheduled_time"]))
            jobs.append(TraceJob(
                submit_time=float(row["creation_time"]) / compression, ipus=ipus, duration=duration,
                time_limit=rounded_limit(duration), user="openb", qos="low" if row["qos"] == "BE" else "normal",
                name=row["name"],
            ))
    return Trace(jobs, openb_mapping(ipus_per_gpu, compression), skipped)


NATIVE_MAPPING = (
    "native trace: submit_time and duration in seconds (or 1h30m-style), ipus as given, time_limit as given or"
    " the duration rounded up to a power-of-two number of minutes; user and qos as given (default trace/normal);"
    " begin (optional) the time on the trace's clock before which the job may not start"
)


def _native_job(row: dict, where: str) -> TraceJob:
    try:
        duration = parse_duration(row["duration"], "duration")
        limit = row.get("time_limit")
        begin = row.get("begin")
        return TraceJob(
            submit_time=parse_duration(row["submit_time"], "submit_time"),
            ipus=int(row["ipus"]),
            duration=duration,
            time_limit=parse_duration(limit, "time_limit") if limit not in (None, "") else rounded_limit(duration),
            user=str(row.get("user") or "trace"),
            qos=str(row.get("qos") or "normal"),
            name=str(row.get("name") or "job"),
            begin=parse_duration(begin, "begin") if begin not in (None, "") else None,
        )
    except KeyError as e:
        raise InvalidArgument(f"{where}: column {e.args[0]} is missing; give submit_time, ipus and duration") from None
    except (ValueError, ValidationError) as e:
        raise InvalidArgument(f"{where}: {e}; fix the value") from None


def read_native(path: str | Path) -> Trace:
    """CSV with a header, or JSON lines, with submit_time, ipus, duration[, time_limit, user, qos, name, begin]."""
    path = Path(path)
    jobs = []
    with open(path, newline="") as f:
        if path.suffix in (".jsonl", ".ndjson"):
            for n, line in enumerate(f, 1):
                if line.strip():
                    jobs.append(_native_job(json.loads(line), f"{path}:{n}"))
        else:
            for n, row in enumerate(csv.DictReader(f), 2):
                jobs.append(_native_job(row, f"{path}:{n}"))
    return Trace(jobs, NATIVE_MAPPING)


def load_trace(path: str | Path, max_ipus: int | None = None, **openb_options) -> Trace:
    """openb if the CSV header says so (openb_options: ipus_per_gpu, compression, limit), else the native format."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"trace {path} is not a readable file; give the path of an openb CSV or a native trace")
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            header = f.readline()
        if all(c in header for c in OPENB_COLUMNS):
            return read_openb(path, max_ipus=max_ipus, **openb_options)
    return read_native(path)
