"""The state folder a controller owns: one controller per folder, for as long as it runs.

Why a lock: two controllers on one folder would each keep their own idea of which IPUs are free, hand the same IPUs
out twice and write over each other's records. flock is released by the kernel when the process ends, even by
SIGKILL, so a crash never leaves the folder locked; the file is opened close-on-exec, so Ray's processes started
by the controller do not inherit the lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from vipu.errors import FailedPrecondition, InvalidArgument

LOCK_NAME = "controller.lock"


def claim(state_dir: Path) -> IO[str]:
    """Create the folder if need be and lock it; keep the returned file open for as long as the folder is used."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        lock = open(state_dir / LOCK_NAME, "a+")
    except FileExistsError:
        raise InvalidArgument(f"--state-dir {state_dir} is a file, not a folder; give a folder") from None
    except OSError as e:
        raise InvalidArgument(
            f"--state-dir {state_dir} cannot be used ({e.strerror}); give a folder this user can create and write"
        ) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise FailedPrecondition(
            f"state folder {state_dir} is in use by another vipu-server{f' (pid {holder})' if holder else ''}; stop"
            " it first, or give this one another --state-dir"
        ) from None
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock
