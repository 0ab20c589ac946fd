"""The local Ray a controller starts (`--ray local`): its folder, and ending every process of it.

Why the controller ends Ray's processes itself: ray.shutdown() only knows a cluster whose start finished, so a
controller stopped while Ray starts (Ctrl-C in the first minute) left its GCS, raylet and their agents running; and
the raylet's agents, orphaned when ray.shutdown() stops it, lingered about a minute. The controller makes itself
their subreaper (Linux's PR_SET_CHILD_SUBREAPER), so every process of its Ray stays its descendant, orphaned or
not, and is found through /proc.

Why a reaper process: a controller killed with -9 ends nothing, and Ray's agents ignore SIGTERM, so they lingered
under init. A small process started with the local Ray notes the controller's descendants every second, and once
the controller has gone (a pidfd) kills the ones it noted that still run, and removes the Ray's folder. (Ray's
processes rename themselves, ray::DashboardAgent, so their command lines cannot be searched.)
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import stat
import tempfile
import time
from collections import defaultdict
from pathlib import Path

TMP, NAME = Path("/tmp"), "vipu-ray-"  # then the controller's pid; short: Ray's socket paths must fit in 107 characters
RAY_FOLDER = "ray"  # Ray's own, inside ours


def folder(pid: int) -> str:
    return str(TMP / f"{NAME}{pid}")


def private_folder(path: str) -> str:
    """`path` made now, for this process's user alone (0700); if something else has that name (another user may make
    it first: the controller's pid can be guessed), a new folder beside it. Why: Ray makes each folder of its own 0777,
    not sticky (its sockets, logs and spilled objects), so only a parent nobody else may enter keeps other users from
    moving its raylet's socket (every new actor then hangs) or reading its logs (walk44)."""
    try:
        os.mkdir(path, 0o700)
        return path
    except FileExistsError:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700:
            return path  # this process's own, from an earlier start of its Ray
    return tempfile.mkdtemp(prefix=f"{os.path.basename(path)}-", dir=os.path.dirname(path))


def remove_stale_folders() -> None:
    """The folders of local Rays whose controller is gone (killed with -9, it could not remove its own)."""
    for path in TMP.glob(f"{NAME}*"):
        pid = path.name.removeprefix(NAME).split("-")[0]  # (a private_folder made beside a taken name: PID-xxxxxxxx)
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def start_reaper(ray_dir: str) -> None:
    """Start the process that ends this local Ray if the controller dies without ending it (kill -9)."""
    import subprocess
    import sys

    code = f"from vipu.workers.local_ray import reap_after; reap_after({os.getpid()}, {ray_dir!r})"
    reaper = subprocess.Popen([sys.executable, "-P", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")  # -P: as hosts.py's stepd
    reaper.stdout.readline()  # it has noted what runs now
    reaper.stdout.close()


def reap_after(controller: int, ray_dir: str, every_s: float = 1.0) -> None:
    """Until `controller` ends, note its descendants every `every_s`; then SIGKILL the noted ones still running
    (the same processes: their start times match) and remove its Ray's folder. A graceful stop ends this process
    first (it is one of the controller's descendants), having ended Ray itself."""
    import select

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    try:
        gone = os.pidfd_open(controller)
    except ProcessLookupError:
        return
    noted: dict[int, str] = {}
    ready = False
    while True:
        noted = {pid: start for pid in _descendants(controller, skip=_not_ray)
                 if (start := _start_time(pid)) is not None}
        if not ready:
            ready = True
            with open(1, "w", closefd=False) as out:  # start_reaper waits for this line
                out.write("noted\n")
        if select.select([gone], [], [], every_s)[0]:
            break
    for pid, start in noted.items():
        if _start_time(pid) == start:  # not a new process that took the pid
            _signal(pid, signal.SIGKILL)
    shutil.rmtree(ray_dir, ignore_errors=True)


SUPERVISOR = b"vipu.jobs.programs.stepd"  # a program's supervisor: it stops its program when the controller goes


def _not_ray(pid: int) -> bool:
    """This reaper, and programs' supervisors with what they run: not the Ray's to kill."""
    if pid == os.getpid():
        return True
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return SUPERVISOR in f.read()
    except OSError:
        return True


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]  # field 22, starttime
    except (OSError, IndexError):
        return None


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


def _descendants(root: int, skip=lambda pid: False) -> list[int]:
    """The processes under `root`, leaving out each one `skip` is true of and those under it."""
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
            if not skip(child):
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
