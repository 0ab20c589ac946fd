"""The local Ray a controller starts (`--ray local`): its folder, and ending every process of it.

Why the controller ends Ray's processes itself: ray.shutdown() only knows a cluster whose start finished, so a
controller stopped while Ray starts (Ctrl-C in the first minute) left its GCS, raylet and their agents running; and
the raylet's agents, orphaned when ray.shutdown() stops it, lingered about a minute. The controller makes itself
their subreaper (Linux's PR_SET_CHILD_SUBREAPER), so every process of its Ray stays its descendant, orphaned or
not, and is found through /proc.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import time
from collections import defaultdict
from pathlib import Path

TMP, NAME = Path("/tmp"), "vipu-ray-"  # then the controller's pid; short: Ray's socket paths must fit in 107 characters


def folder(pid: int) -> str:
    return str(TMP / f"{NAME}{pid}")


def remove_stale_folders() -> None:
    """The folders of local Rays whose controller is gone (killed with -9, it could not remove its own)."""
    for path in TMP.glob(f"{NAME}*"):
        pid = path.name.removeprefix(NAME)
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def adopt_orphans() -> None:
    """Make the processes this one starts, and theirs, stay its descendants when their parent ends."""
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_descendants(grace_s: float = 3.0) -> None:
    """SIGTERM every descendant of this process, then SIGKILL the ones still there after `grace_s`. Descendants
    that appear meanwhile (a raylet starting its agents as it is stopped) are ended too; the ones that became this
    process's children (orphans) are reaped."""
    ended: set[int] = set()
    deadline = time.monotonic() + grace_s
    while True:
        living = {pid for pid in _descendants(os.getpid()) if _alive(pid)}
        for pid in living - ended:
            _signal(pid, signal.SIGTERM)
        ended |= living
        if not living or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in living:
        _signal(pid, signal.SIGKILL)
    for pid in ended:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not a child of this process, or reaped already (by subprocess, which started it)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children[ppid].append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass  # ended meanwhile
