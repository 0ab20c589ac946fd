"""The Standard Workload Format (SWF, version 2.2) of the Parallel Workloads Archive: one job per line, 18
whitespace-separated fields (-1 where a log does not know), header comments on lines starting with `;`.

Why processors become IPUs by a rule the user can change: an HPC log counts processors of a machine that is not an
IPU-Pod, so no one mapping is right; `next-pow2` keeps the numbers, `factor:N` scales them, and `scale` maps the
log's whole machine (its MaxProcs header) onto the whole Pod, which keeps the offered load. The rule is printed with
every result.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.replay.trace_rows import Trace, TraceJob, next_power_of_two, rounded_limit

FIELDS = ("job", "submit", "wait", "run_time", "allocated_processors", "cpu_time", "memory",
          "requested_processors", "requested_time", "requested_memory", "status", "user", "group", "executable",
          "queue", "partition", "preceding_job", "think_time")
PARTIAL = {2, 3, 4}  # a partial run of a checkpointed or swapped job; its job's summary line is replayed
CANCELLED = 5
RULES = "next-pow2, factor:N (e.g. factor:0.125, 8 processors per IPU) or scale (the log's MaxProcs onto the Pod)"


def is_swf(path: Path, first_line: str) -> bool:
    return path.suffix.lower() == ".swf" or first_line.startswith(";")


def ipu_factor(rule: str, header: dict[str, str], pod_ipus: int, path: Path) -> tuple[float, str]:
    """(IPUs per processor, the rule in words) for `--swf-ipus RULE`."""
    if rule == "next-pow2":
        return 1.0, "IPUs = next power of two of the processors (one IPU per processor)"
    if rule == "scale":
        procs = header.get("maxprocs")
        if procs is None or not re.fullmatch(r"\d+", procs) or int(procs) < 1:
            raise InvalidArgument(f"--swf-ipus scale: {path} has no MaxProcs header comment (; MaxProcs: N); give"
                                  " factor:N instead")
        factor = pod_ipus / int(procs)
        return factor, (f"IPUs = next power of two of ceil(processors x {factor:g}), the log's MaxProcs {procs}"
                        f" onto the Pod's {pod_ipus} IPUs")
    m = re.fullmatch(r"factor:(\d+(?:\.\d+)?(?:e-?\d+)?)", rule)
    if m and 0 < float(m.group(1)) < math.inf:
        factor = float(m.group(1))
        return factor, f"IPUs = next power of two of ceil(processors x {factor:g})"
    raise InvalidArgument(f"--swf-ipus {rule!r} is not a rule; give {RULES}")


def read_swf(path: str | Path, max_ipus: int | None = None, pod_ipus: int = 256, rule: str = "next-pow2") -> Trace:
    """An SWF log (docs/traces.md says how each field is used and which rows are skipped)."""
    path = Path(path)
    header: dict[str, str] = {}
    rows: list[tuple[str, int, list[float]]] = []
    with open(path, encoding="utf-8-sig") as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if not text:
                continue
            if text.startswith(";"):
                key, _, value = text[1:].partition(":")
                if value:
                    header.setdefault(key.strip().lower(), value.strip())
                continue
            fields = text.split()
            where = f"{path}:{n}"
            if len(fields) != len(FIELDS):
                raise InvalidArgument(f"{where}: {len(fields)} fields, not SWF's 18 (job, submit, wait, run time,"
                                      " processors, ...); give all 18, -1 for one the log does not know")
            bad = next((i for i, v in enumerate(fields) if not _is_number(v)), None)
            if bad is not None:
                raise InvalidArgument(f"{where}: field {bad + 1} ({FIELDS[bad]}) is {fields[bad]!r}, not a number;"
                                      " SWF fields are numbers, -1 where the log does not know")
            rows.append((where, n, [float(v) for v in fields]))
    factor, words = ipu_factor(rule, header, pod_ipus, path)
    skipped: Counter = Counter()
    jobs = []
    for where, n, v in rows:
        job = _job(where, n, dict(zip(FIELDS, v)), factor, max_ipus, skipped)
        if job is not None:
            jobs.append(job)
    return Trace(jobs, swf_mapping(words), skipped)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


# the fields a replay reads; -1 is SWF's unknown, and any other negative value is a broken line
READ = ("job", "submit", "run_time", "allocated_processors", "requested_processors", "requested_time", "status", "user")


def _job(where: str, line: int, f: dict[str, float], factor: float, max_ipus: int | None,
         skipped: Counter) -> TraceJob | None:
    bad = next((k for k in READ if f[k] < 0 and f[k] != -1), None)
    if bad is not None:
        raise InvalidArgument(f"{where}: field {FIELDS.index(bad) + 1} ({bad}) is {f[bad]:g}; SWF fields are 0 or"
                              " more, -1 where the log does not know: fix the line")
    status = int(f["status"])
    if status in PARTIAL:
        skipped["partial runs (status 2-4; their job's own line is replayed)"] += 1
        return None
    if f["submit"] < 0:
        skipped["no submit time (-1)"] += 1
        return None
    run = f["run_time"]
    if run < 0:
        skipped["no run time (-1)"] += 1
        return None
    if status == CANCELLED and run == 0:
        skipped["cancelled before it ran"] += 1
        return None
    procs = f["allocated_processors"] if f["allocated_processors"] > 0 else f["requested_processors"]
    if procs <= 0:
        skipped["no processors (-1 or 0)"] += 1
        return None
    ipus = next_power_of_two(math.ceil(procs * factor - 1e-9))
    if max_ipus is not None and ipus > max_ipus:
        skipped["larger than the Pod's largest partition"] += 1
        return None
    # a run time of 0 is kept: SWF's definition reads it as a run under half a second (times rounded to seconds),
    # and bounded slowdown is defined for it (measures.py)
    duration = run
    limit = max(f["requested_time"], duration) if f["requested_time"] > 0 else rounded_limit(duration)
    user = f"u{int(f['user'])}" if f["user"] >= 0 else "trace"
    return TraceJob(submit_time=f["submit"], ipus=ipus, duration=duration, time_limit=limit, user=user,
                    name=f"swf{int(f['job'])}" if f["job"] >= 0 else "job", source=where, line=line,
                    trace_wait=f["wait"] if f["wait"] >= 0 else None)


def swf_mapping(ipus: str) -> str:
    return (
        f"SWF -> IPU-Pod mapping: {ipus}, processors = allocated (field 5), or requested (8) when that is -1 or 0;"
        " arrival = submit time (2); run time = field 4 (0 kept: a run under half a second); time_limit = the"
        " requested time (9), at least the run time (so no TIMEOUT the log did not have), or when -1 the run time"
        " rounded up to a power-of-two number of minutes; user u<field 12>; wait (3), status (11) but"
        " cancelled-before-running, group, queue and partition are not replayed; skipped: partial runs (status 2-4),"
        " rows with -1 submit or run time, or -1 or 0 processors, jobs cancelled before they ran, and jobs larger than"
        " the Pod's largest partition"
    )
