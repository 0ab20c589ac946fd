"""How a run's program ended, written by its supervisor (stepd.py) into a file beside the run's lock: its exit code,
the signal that ended it and when, by the wall clock, as slurmstepd keeps a step's end for a slurmctld that is away.

Why a file: the supervisor tells the controller on its pipe, but a controller killed meanwhile (kill -9, a crash)
hears nothing, and its restart ended such a run at the restart's time, so the outage counted as run time (Elapsed,
End, the usage charged to its user). The file outlives both; the restarted controller reads it for the run it ends
(control/queue_rebuild.py), and the controller that did hear removes it once the run's end is written. It is
written whole under another name and renamed, so a reader never sees half of one, and synced, so a crash of the
machine keeps it.

Only the controller's user writes in the spool (stepd.own_spool), so what is there is a supervisor's. With Ray the
file is on the run's node: a restarted controller asks that node, once connected (run_nodes.py).
"""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.workload import RunExit


def exit_path(spool: str | Path, job_id: int, run: int) -> Path:
    return Path(spool) / f"job{job_id}.run{run}.exit"


def record_exit(path: Path, exit_code: int, signal: int, at: float) -> None:
    """The supervisor's: the program's end, durably. OSError if it cannot be written (then a restart ends the run
    at its own time, as when the supervisor died too)."""
    temporary = path.with_name(path.name + ".new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps({"exit_code": exit_code, "signal": signal, "at": at}).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(folder)  # the rename itself
    finally:
        os.close(folder)


def recorded_exit(path: Path) -> dict | None:
    """What a supervisor recorded in `path` ({"exit_code", "signal", "at"}), or None: no file, or one no supervisor
    finished writing, or values no supervisor writes (a damaged file: a time that is not finite, an exit code
    outside 0-255, a signal outside 0-NSIG), which would otherwise be stored and stop the next start."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            data = json.loads(f.read(4096))
            found = {"exit_code": int(data["exit_code"]), "signal": int(data["signal"]), "at": float(data["at"])}
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # (RecursionError: nested [[[)
            return None
    sane = math.isfinite(found["at"]) and 0 <= found["exit_code"] <= 255 and 0 <= found["signal"] < signal.NSIG
    return found if sane else None


def recorded_end(spool: str | Path | None, job: Job) -> RunExit | None:
    """How the job's latest run ended, as its supervisor recorded it on this node in `spool`; None if it did not (it
    is still running, it never started, or its supervisor died before its program ended) or there is no spool."""
    from vipu.scheduler.workload import RunExit  # (not at the top: the supervisor imports this module too)

    run = job.runs_started
    found = recorded_exit(exit_path(spool, job.id, run)) if run and spool is not None else None
    return None if found is None else RunExit(found["at"], found["exit_code"], found["signal"])


def end_untold(job: Job | None, run: int) -> bool:
    """Whether the store still lacks how the job's run number `run` ended, so a restart needs its exit record: the
    run goes on as far as the store knows (its end is the restart's to record), or it was stopped and its ExitCode
    is still to be told (program_ended would record one)."""
    from vipu.scheduler.job_states import JobState  # (not at the top: the supervisor imports this module too)

    if job is None or job.runs_started != run:  # (purged, or run again since: that end is written)
        return False
    return job.state is JobState.RUNNING or job.program_ended(job.latest_start, 0, 0) is not None


def forget_exits(spool: str | Path, job_id: int) -> None:
    """Remove what the supervisors of the job's runs recorded: every end is written in the store by now."""
    for path in Path(spool).glob(f"job{job_id}.run*.exit"):
        path.unlink(missing_ok=True)
