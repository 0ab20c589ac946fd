"""The Alibaba openb GPU trace (alibaba/clusterdata, cluster-trace-gpu-v2023): its pod lists, with times
(`openb_pod_list_default.csv`) or without (the multigpu variants: name, cpu_milli, memory_mib, num_gpu, gpu_milli),
which replay once arrivals and run times are drawn (arrivals.py)."""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.replay.trace_rows import (Trace, TraceJob, csv_rows, missing_columns, next_power_of_two, number, per_gpu,
                                   rounded_limit)

OPENB_COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time")
TIMES = ("creation_time", "deletion_time", "scheduled_time")
RESOURCE_COLUMNS = ("name", "num_gpu", "gpu_milli")  # a pod list without times has at least these
OPENB_ONLY = {"num_gpu", "gpu_milli", *TIMES}  # not in the native format
OPENB_QOS = {"BE": "low", "LS": "normal", "Burstable": "normal", "Guaranteed": "normal"}
IPUS_PER_GPU = 4
FORM = "an openb pod list"


def openb_mapping(ipus_per_gpu: int, compression: float, timed: bool = True) -> str:
    sizes = f"IPUs = next power of two of ceil(num_gpu x gpu_milli / 1000), {per_gpu(ipus_per_gpu)}"
    if not timed:
        return (f"openb pod list without times -> IPU-Pod mapping: {sizes}; qos BE -> low, LS/Burstable/Guaranteed"
                " (or no qos column) -> normal; one user (the trace has none); skipped: tasks with 0 GPUs (CPU-only)"
                " and tasks larger than the Pod's largest partition")
    return (
        f"openb -> IPU-Pod mapping: {sizes}; arrival ="
        f" creation_time{'' if compression == 1 else f' / {compression:g}'}; run time = deletion_time -"
        " scheduled_time; time_limit = run time rounded up to a power-of-two number of minutes (so no TIMEOUTs);"
        " qos BE -> low, LS/Burstable/Guaranteed -> normal; one user (the trace has none); skipped: tasks with 0"
        " GPUs (CPU-only) and tasks never scheduled (no scheduled_time/deletion_time), and tasks larger than the"
        " Pod's largest partition"
    )


def is_openb(columns: list[str]) -> bool:
    """openb's own columns: the file is meant as openb, and read_openb names any that are missing."""
    return bool(set(columns) & OPENB_ONLY)


def read_openb(path: str | Path, ipus_per_gpu: int = IPUS_PER_GPU, compression: float = 1.0,
               max_ipus: int | None = None, limit: int | None = None, runtime_column: str | None = None) -> Trace:
    """An openb pod list; `compression` divides arrival times (raising the load) and `limit` stops after that many
    rows (skipped rows included). A list without creation_time, deletion_time and scheduled_time has no times:
    its jobs' arrivals (and run times, unless `runtime_column` names a column of seconds) are left to be drawn."""
    path = Path(path)
    skipped: Counter = Counter()
    jobs: list[TraceJob] = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        timed = any(c in columns for c in TIMES)
        missing_columns(columns, [c for c in OPENB_COLUMNS if timed or c in RESOURCE_COLUMNS], path, FORM)
        if runtime_column is not None and runtime_column not in columns:
            raise InvalidArgument(f"--runtimes {runtime_column}: {path} has no column {runtime_column!r}; give one"
                                  f" of its columns ({', '.join(columns)}), a file of run times or a distribution"
                                  " such as lognormal:6,1.5")
        for where, line, row in csv_rows(reader, path):
            if limit is not None and len(jobs) + sum(skipped.values()) >= limit:
                break
            gpus = number(row, "num_gpu", where, int) if row["num_gpu"] else 0
            if gpus < 0:
                raise InvalidArgument(f"{where}: num_gpu is {gpus}, below 0; give the GPUs the task asked for (0 for"
                                      " a CPU-only task)")
            qos = row["qos"] if timed else (row.get("qos") or "LS")
            if qos not in OPENB_QOS:
                raise InvalidArgument(f"{where}: qos is {qos!r}, not one of openb's {', '.join(OPENB_QOS)};"
                                      " fix the row")
            if gpus == 0:
                skipped["no GPU (CPU-only task)"] += 1
                continue
            if timed and (not row["scheduled_time"] or not row["deletion_time"]):
                skipped["never scheduled in the trace"] += 1
                continue
            milli = number(row, "gpu_milli", where, int) if row["gpu_milli"] else 1000
            if not 0 < milli <= 1000:
                raise InvalidArgument(f"{where}: gpu_milli is {milli}, outside 1..1000; it is the share of each GPU in"
                                      " thousandths (1000 or empty: a whole GPU; num_gpu 0 for a CPU-only task)")
            ipus = next_power_of_two(math.ceil(gpus * milli / 1000)) * ipus_per_gpu
            if max_ipus is not None and ipus > max_ipus:
                skipped["larger than the Pod's largest partition"] += 1
                continue
            waited = None  # the wait the trace recorded, read against the replay's: only with its own arrivals
            if runtime_column is not None:
                ran = number(row, runtime_column, where)
                if ran < 0:
                    raise InvalidArgument(f"{where}: {runtime_column} is {ran:g}, below 0; run times are seconds")
                submit = 0.0 if not timed else number(row, "creation_time", where) / compression
            elif timed:
                ran = number(row, "deletion_time", where) - number(row, "scheduled_time", where)
                if ran < 0:
                    raise InvalidArgument(f"{where}: deletion_time is before scheduled_time; fix the row")
                submit = number(row, "creation_time", where) / compression
                if compression == 1:
                    waited = number(row, "scheduled_time", where) - submit
            else:
                ran, submit = 0.0, 0.0  # drawn later
            duration = ran  # 0 kept (deleted the second it was scheduled), as every reader keeps it
            jobs.append(TraceJob(
                submit_time=submit, ipus=ipus, duration=duration, time_limit=rounded_limit(duration), user="openb",
                qos=OPENB_QOS[qos], name=row["name"], source=where, line=line, trace_wait=waited,
            ))
    missing = frozenset(() if timed else ("arrivals",) if runtime_column else ("arrivals", "runtimes"))
    mapping = openb_mapping(ipus_per_gpu, compression, timed)
    if runtime_column is not None:
        mapping += f"; run time = column {runtime_column} (seconds)"
    return Trace(jobs, mapping, skipped, missing)
