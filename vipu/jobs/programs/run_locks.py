"""Whether a run's program may still be alive, for a controller that did not start it: a lock its supervisor holds.

Why: a controller's restart ends the runs it had (NODE_FAIL, requeued), but their programs go on ending for up to
KillWait after it went (their supervisors, stepd.py, send SIGTERM then, and SIGKILL KillWait later); a program that
traps SIGTERM to write a checkpoint is the common case. A new run on the same IPUs (the job's own, or a preemptor's)
must wait for that, as within one controller's life (Slurm's Cleaning). The new process knows nothing of the old one's
supervisors, so each supervisor takes an advisory lock (flock) on a file of its own in the spool before its program
starts, and lets go of it only by exiting, once the program's whole session is gone; the kernel lets go of it however
the supervisor dies. A lock that can be taken, or no file, means no process of that run is alive. The supervisor
runs as the controller's user, under --secure too, so the controller can always open the file.

The spool is the node's where the supervisor ran: with Ray, a restarted controller asks the run's node, which the
store names (run_nodes.py).
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger("vipu.programs")
POLL_S = 0.05  # how often a watch looks at the locks it waits for
# how long SIGKILLed processes may take to go: Slurm's UnkillableStepTimeout, 60 s by default
# (https://slurm.schedmd.com/slurm.conf.html#OPT_UnkillableStepTimeout)
GONE_WAIT_S = 60.0


def lock_path(spool: str | Path, job_id: int, run: int) -> Path:
    return Path(spool) / f"job{job_id}.run{run}.lock"


def hold(path: Path) -> int:
    """The supervisor's: the run's lock, taken, with its pid written in it (for the operator); the descriptor stays
    open until the supervisor exits (closed on exec: the program does not hold it). BlockingIOError if another
    process holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        if _is_at(fd, path):
            break
        # holder() (a restart's, a clean stop's tidy) found it free between the open and the flock and removed it:
        # a lock on a file no longer at `path` is one no controller sees, so the program would pass for gone
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _is_at(fd: int, path: Path) -> bool:
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def let_go(path: Path, fd: int) -> None:
    """The supervisor's, last: its program's session is gone."""
    path.unlink(missing_ok=True)
    os.close(fd)


def holder(path: Path) -> int | None:
    """The pid of the supervisor that holds the lock (0 if it has not written it yet), or None when the lock is free
    or there is no file: no process of that run is alive. A free file (its supervisor was killed before it could
    remove it) is removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:  # no supervisor made this (only the controller's user writes in the spool): none to wait for
        log.warning("%s is no run's lock (%s): not waited for", path, e.strerror)
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = f.read(32).strip()
            return int(text) if text.isdigit() else 0
        path.unlink(missing_ok=True)
        return None


def left_running(spool: str | Path, job_id: int) -> dict[Path, int]:
    """The job's runs whose supervisors still hold their locks, with their pids."""
    held = {}
    for path in sorted(Path(spool).glob(f"job{job_id}.run*.lock")):
        pid = holder(path)
        if pid is not None:
            held[path] = pid
    return held


def held_here(paths: list) -> list:
    """Those of the locks at `paths` that a supervisor holds, looked at on this machine."""
    return [p for p in paths if holder(Path(p)) is not None]


def when_gone(held: dict, then: Callable[[], None], closing: threading.Event, warn_after: float, name: str,
              holding: Callable[[list], list] = held_here, poll_s: float = POLL_S) -> None:
    """Call `then` (in a thread of its own) once every lock of `held` (left_running's) is free; never if `closing`
    is set first. Past `warn_after` seconds it says once which supervisors still hold theirs: they outlived KillWait.
    `holding`: which of them are still held (held_here, or asked of the node the run is on: run_nodes.py)."""
    def watch() -> None:
        warn_at = time.monotonic() + warn_after
        left = list(held)
        while left:
            left = holding(left)
            if not left:
                break
            if time.monotonic() >= warn_at:
                log.warning("%s: supervisor(s) %s still hold %s past KillWait; its IPUs stay in use until they exit",
                            name, ", ".join(str(held[p]) for p in left), ", ".join(map(str, left)))
                warn_at = math.inf
            if closing.wait(poll_s):
                return
        if not closing.is_set():
            then()

    threading.Thread(target=watch, name=f"vipu-old-run-{name}", daemon=True).start()
