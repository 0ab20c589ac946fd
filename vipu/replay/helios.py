"""SenseTime's Helios GPU-cluster job logs (S-Lab-System-Group/HeliosData: `cluster_log.csv` of Earth, Saturn,
Uranus and Venus): one Slurm job per row, with its user, GPUs, final state and times."""

from __future__ import annotations

import csv
import math
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.replay.trace_rows import (Trace, TraceJob, csv_rows, missing_columns, next_power_of_two, number, per_gpu,
                                   rounded_limit)

HELIOS_COLUMNS = ("job_id", "user", "gpu_num", "state", "submit_time", "duration")
FORM = "a Helios job log"


def is_helios(columns: list[str]) -> bool:
    return "gpu_num" in columns  # openb's is num_gpu; the native format has neither


def helios_mapping(ipus_per_gpu: int) -> str:
    return (
        f"Helios -> IPU-Pod mapping: IPUs = next power of two of gpu_num, {per_gpu(ipus_per_gpu)}; arrival ="
        " submit_time (a date and time, read as UTC, or seconds); run time = duration (0 kept); time_limit = run time"
        " rounded up to a power-of-two number of minutes (so no TIMEOUTs); user as given; vc, state, queue time and"
        " the other columns are not replayed; skipped: jobs with 0 GPUs (CPU-only), jobs that never ran (no duration)"
        " or were cancelled before they ran, and jobs larger than the Pod's largest partition"
    )


def _seconds(text: str, column: str, where: str) -> float:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InvalidArgument(f"{where}: {column} is {text!r}, neither a date and time (2020-06-09 18:41:01) nor a"
                              " number of seconds; fix the row")
    return value


def read_helios(path: str | Path, ipus_per_gpu: int = 4, max_ipus: int | None = None) -> Trace:
    path = Path(path)
    skipped: Counter = Counter()
    jobs: list[TraceJob] = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing_columns(reader.fieldnames, HELIOS_COLUMNS, path, FORM)
        for where, line, row in csv_rows(reader, path):
            gpus = number(row, "gpu_num", where, int) if row["gpu_num"] else 0
            if gpus < 0:
                raise InvalidArgument(f"{where}: gpu_num is {gpus}, below 0; give the GPUs the job asked for")
            if gpus == 0:
                skipped["no GPU (CPU-only job)"] += 1
                continue
            if not row["duration"]:
                skipped["never ran (no duration)"] += 1
                continue
            ran = number(row, "duration", where)
            if ran < 0:
                raise InvalidArgument(f"{where}: duration is {ran:g}, below 0; it is seconds the job ran")
            if ran == 0 and row["state"] == "CANCELLED":
                skipped["cancelled before it ran"] += 1
                continue
            ipus = next_power_of_two(gpus) * ipus_per_gpu
            if max_ipus is not None and ipus > max_ipus:
                skipped["larger than the Pod's largest partition"] += 1
                continue
            duration = ran  # 0 kept for a job that ended as it started, as every reader keeps it
            submit = _seconds(row["submit_time"], "submit_time", where)
            started = row.get("start_time")  # the recorded start, read against the replay's: optional
            jobs.append(TraceJob(
                submit_time=submit, ipus=ipus, duration=duration,
                trace_wait=_seconds(started, "start_time", where) - submit if started else None,
                time_limit=rounded_limit(duration), user=row["user"] or "trace", name=f"helios{row['job_id']}",
                source=where, line=line,
            ))
    return Trace(jobs, helios_mapping(ipus_per_gpu), skipped)
