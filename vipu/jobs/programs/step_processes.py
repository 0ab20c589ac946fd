"""The processes of a run: every process below its supervisor (stepd.py), found in /proc, as Slurm's proctrack plugin
finds a step's.

Why below the supervisor, not the program's session: a process can leave the session (setsid, nohup's shell, a
daemon's double fork) and so outlived its job. The supervisor makes itself a child subreaper (prctl
PR_SET_CHILD_SUBREAPER, Linux 3.4 on): a process whose parent dies is re-parented to it instead of to init, so all
the program started stays below it however it forked, and is signalled, killed and reaped from here. Why not a
cgroup (proctrack/cgroup): making one needs root or a delegated tree, and the controller runs as anyone; a subreaper
needs no privilege. The limit: a process another daemon starts for the program (systemd-run, at, ssh to this host)
is that daemon's, not the job's.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time

from vipu.jobs.programs.run_locks import GONE_WAIT_S

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
EXEC_WAIT_S = 60.0  # from a program's fork to its exec: our own code, unless the job's user stops it in between


def become_subreaper() -> bool:
    """Make this process the subreaper of all it starts; False where the kernel has none (not Linux, before 3.4):
    then a process that leaves the program's session is not found once its parent has gone."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def below(root: int) -> list[tuple[int, int]]:
    """The live processes below `root`, as (pid, process group), parents before their children (zombies are dead:
    left out; a process's children are re-parented as it exits, so none hangs below a zombie)."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
        except OSError:  # gone since the listing
            continue
        if fields[0] not in (b"Z", b"X"):  # state, ppid, pgrp
            children.setdefault(int(fields[1]), []).append((int(entry), int(fields[2])))
    found, parents = [], [root]
    while parents:
        for child in children.pop(parents.pop(), []):
            found.append(child)
            parents.append(child[0])
    return found


def signal_all(pid: int, sig: int, root: int) -> None:
    """Signal every process of the program `pid` (a session leader) below `root`: its process group at once, then
    each process outside it (the groups poprun's instances have, so that one failing stops the others without
    stopping poprun; what left the session). Why not each process alone: a second signal to the script made its trap
    run twice."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    for other in other_groups(pid, root):
        kill(other, sig)


def other_groups(pid: int, root: int) -> list[int]:
    """The processes below `root` outside process group `pid`."""
    return [member for member, group in below(root) if group != pid]


def kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):  # gone since /proc was read
        pass


def until_exec(pid: int, pipe: int, wait_s: float = EXEC_WAIT_S) -> str | None:
    """What a forked child wrote on its close-on-exec `pipe` (closed here): "" once it exec'd, else why it could not,
    the child reaped. None, the child killed and reaped, if it did neither in `wait_s`: after its setuid the job's user
    may stop it (kill -STOP -1), and a supervisor waiting for ever could neither start nor stop the job."""
    deadline, said = time.monotonic() + wait_s, b""
    try:
        while select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(pipe, 4096)
            if not chunk:
                if said:
                    os.waitpid(pid, 0)
                return said.decode(errors="replace")
            said += chunk
    finally:
        os.close(pipe)
    kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def reap() -> dict[int, int]:
    """Reap every child of this process that has ended (the program, or what was re-parented to it): {pid: wait
    status}."""
    reaped = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # no child left
            return reaped
        if pid == 0:
            return reaped
        reaped[pid] = status


def end_all(root: int) -> None:
    """SIGKILL every process below `root` (this process) and reap them, until none is left, for at most GONE_WAIT_S:
    one in an uninterruptible wait (a disk, a hung NFS) may take its time. Killing again on each pass catches what
    was forked meanwhile, and a child of a killed process is re-parented here and found on the next."""
    deadline = time.monotonic() + GONE_WAIT_S
    while True:
        left = below(root)
        reap()
        if not left or time.monotonic() >= deadline:
            return
        for pid, _ in left:
            kill(pid, signal.SIGKILL)
        time.sleep(0.01)
