"""Reading a job trace for replay: which format a file is in, and the options every format shares.

Formats (docs/traces.md): the Parallel Workloads Archive's SWF (swf.py), Alibaba's openb pod lists (openb.py),
SenseTime's Helios job logs (helios.py) and a native CSV/JSONL format (native.py). A file says which it is: SWF by
its `.swf` name or `;` header comments, the CSV formats by their header's columns.
"""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.replay.helios import is_helios, read_helios
from vipu.replay.native import NATIVE_COLUMNS, NATIVE_MAPPING, read_native  # noqa: F401 - the format's names
from vipu.replay.openb import OPENB_COLUMNS, is_openb, read_openb  # noqa: F401
from vipu.replay.swf import is_swf, read_swf
from vipu.replay.trace_rows import Trace, TraceJob, next_power_of_two, rounded_limit  # noqa: F401
from vipu.scheduler.durations import MAX_SECONDS

FORMS = "give an SWF log, an openb or Helios CSV, or a native CSV or JSONL trace (docs/traces.md)"


def compressed(trace: Trace, compression: float) -> Trace:
    """Arrivals (and begin times) `compression` times closer together, counted from the first submission; run
    times and limits unchanged, so the load is `compression` times higher (`vipu simulate --compress`)."""
    if compression == 1 or not trace.jobs:
        return trace
    origin = min(j.submit_time for j in trace.jobs)

    def closer(t: float | None) -> float | None:
        return None if t is None else origin + (t - origin) / compression

    jobs = [replace(j, submit_time=closer(j.submit_time), begin=closer(j.begin), trace_wait=None) for j in trace.jobs]
    return replace(trace, jobs=jobs, mapping=f"{trace.mapping}; arrivals and begin times {compression:g}x compressed:"
                   f" first submission + (time - first submission) / {compression:g}")


def with_limits(trace: Trace, factor: float | None) -> Trace:
    """Every job's time limit `factor` times its run time (at least 1 s, at most the year a job may ask for), in
    place of the trace's own or derived one: how accurate the estimates backfill and sjf plan with are is then the
    study's choice, not the trace's (`vipu simulate --limit-factor`)."""
    if factor is None:
        return trace
    jobs = [replace(j, time_limit=min(MAX_SECONDS, max(1.0, factor * j.duration))) for j in trace.jobs]
    return replace(trace, jobs=jobs, mapping=f"{trace.mapping}; time limits = {factor:g} x run time (at least 1 s, at"
                   f" most 366 days), in place of the above (--limit-factor {factor:g})")


def check_limit_factor(factor: float) -> None:
    if not (math.isfinite(factor) and factor >= 1):
        raise InvalidArgument(f"--limit-factor is {factor:g}; give 1 or more (1: every job asks for its run time"
                              " exactly, 2: for twice it), so that no job times out")


def check_ipus_per_gpu(ipus_per_gpu: int) -> None:
    """A GPU's IPUs must keep every request a power of two, as a partition's size is."""
    if ipus_per_gpu < 1 or ipus_per_gpu & (ipus_per_gpu - 1):
        raise InvalidArgument(f"--ipus-per-gpu is {ipus_per_gpu}; give a power of two (1, 2, 4: a GPU as one"
                              " IPU-Machine's 4 IPUs, the default), so that every request stays a partition's size")


def check_compression(compression: float) -> None:
    if not (isinstance(compression, (int, float)) and math.isfinite(compression) and compression > 0):
        raise InvalidArgument(f"--compress is {compression}; give a finite number more than 0 (4: arrivals 4x closer)")


def load_trace(path: str | Path, max_ipus: int | None = None, compression: float = 1.0, pod_ipus: int | None = None,
               swf_ipus: str = "next-pow2", runtime_column: str | None = None, ipus_per_gpu: int | None = None,
               **openb_options) -> Trace:
    """The trace in the file at `path`, in whichever format it is (openb_options: limit); `ipus_per_gpu` (4 unless
    given) is a GPU trace's IPUs per GPU, refused for the formats that count no GPUs;
    `compression` brings arrivals that many times closer (openb: creation_time / compression, as its mapping says;
    the others: compressed()). `swf_ipus` is an SWF log's processors-to-IPUs rule (swf.py); `runtime_column` a
    column of an openb pod list holding run times. A trace with no job to replay is an error: its all-zero figures
    would look like a result."""
    path = Path(path)
    check_compression(compression)
    gpu = {} if ipus_per_gpu is None else {"ipus_per_gpu": ipus_per_gpu}
    if ipus_per_gpu is not None:
        check_ipus_per_gpu(ipus_per_gpu)
    if not path.is_file():
        raise InvalidArgument(f"--trace {path} is not a readable file; {FORMS}")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            first = f.readline()
        columns = next(csv.reader([first]), []) if path.suffix == ".csv" and first else []
        if runtime_column is not None and not is_openb(columns):
            raise InvalidArgument(f"--runtimes {runtime_column}: only an openb pod list's columns can give run times;"
                                  " give a file of run times or a distribution such as lognormal:6,1.5")
        if gpu and not (is_openb(columns) or is_helios(columns)):  # SWF counts processors, a native trace IPUs
            raise InvalidArgument(f"--ipus-per-gpu: {path} is no GPU trace (openb or Helios); an SWF log's processors"
                                  " become IPUs by --swf-ipus, a native trace gives ipus itself")
        if is_swf(path, first):
            trace = compressed(read_swf(path, max_ipus, pod_ipus or max_ipus or 256, swf_ipus), compression)
        elif is_openb(columns):
            trace = read_openb(path, max_ipus=max_ipus, compression=compression, runtime_column=runtime_column,
                               **gpu, **openb_options)
        elif is_helios(columns):
            trace = compressed(read_helios(path, max_ipus=max_ipus, **gpu), compression)
        else:
            trace = compressed(read_native(path), compression)
    except UnicodeDecodeError:
        raise InvalidArgument(f"--trace {path} is not UTF-8 text, so not a trace; {FORMS}") from None
    except OSError as e:
        raise InvalidArgument(f"--trace {path} cannot be read ({e.strerror}); {FORMS}") from None
    if not trace.jobs:
        if trace.skipped:  # a trace in a known format whose every row was left out: the format is not the fix
            raise InvalidArgument(f"--trace {path} has no jobs to replay: every row was skipped"
                                  f" ({trace.skipped_text()}); docs/traces.md says which rows each format skips")
        raise InvalidArgument(f"--trace {path} has no jobs to replay; {FORMS}")
    return trace
