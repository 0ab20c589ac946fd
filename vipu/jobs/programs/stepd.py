"""The supervisor of one run of a user's program: Slurm's slurmstepd, as a process of its own.

Why a process between the controller and the program: the program runs in a session of its own, as the job's user,
with its output going straight to its files; the supervisor stays as the controller's user, so it can always end
every process of the job, which are all below it, in the program's session or not (it is their subreaper:
step_processes.py): on SIGTERM (a cancel or a time limit) it sends them SIGTERM, and SIGKILL after the grace period
(Slurm's KillWait), and when the script exits it kills what the script left behind (a setsid or a daemon's double
fork included). It also ends them when the process that started it dies, even by SIGKILL: a controller that is
killed leaves no program running that nobody knows about. It holds the run's lock (run_locks.py) from before the
program starts until every process of the job is gone, so a controller started again meanwhile knows when the run's
IPUs are free.

Why it leaves its starter's process tree (a double fork) and watches the starter instead: whoever kills the starter
may kill its descendants with SIGKILL first (Ray does, for an actor's worker), and a supervisor killed so could not
stop the program, which runs on in a session of its own. Out of the tree, it sees its starter go (a pidfd) and stops
the program itself.

Protocol: the launcher writes one JSON line on stdin (the launch: see program_runs.py), then, while the program runs,
{"signal": N, "to": T} lines (scancel --signal: see command(); the program goes on) until it closes stdin; the
supervisor answers with JSON lines on stdout: {"supervisor": PID} first (signal it, not the process the launcher
started), then {"started": {"pid": P}} once the program runs, then {"ended": {"exit_code": N, "signal": S}} once it
and all it started are gone; or {"failed": "why"} if it could not start (nothing ran). How the program ended is
also written into the spool (run_exits.py), for a controller that was away when it did.
Run: python -m vipu.jobs.programs.stepd
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import stat
import sys
import time
from pathlib import Path

from vipu.clock import WallClock
from vipu.jobs.output_folder import mark_writer, missing_folder
from vipu.jobs.programs.login_environment import with_login
from vipu.jobs.programs.resource_limits import applied
from vipu.jobs.programs.run_exits import exit_path, record_exit
from vipu.jobs.programs.run_locks import hold, let_go, lock_path
from vipu.jobs.programs.spool import is_own
from vipu.jobs.programs.step_processes import (EXEC_WAIT_S, become_subreaper, below, end_all, kill, reap, signal_all,
                                               until_exec)


def main() -> int:
    try:
        starter = os.pidfd_open(os.getppid())  # readable once the starter has gone
    except ProcessLookupError:
        return 1
    if os.fork() > 0:
        os._exit(0)  # the starter's own child ends at once; the supervisor goes on outside its tree
    os.setsid()
    become_subreaper()  # what the program starts stays below it, whatever its parents do (step_processes.py)
    say({"supervisor": os.getpid()})
    commands = Lines(0)
    launch = json.loads(commands.next() or "{}")
    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_w, False)
    signal.set_wakeup_fd(stop_w)
    signal.signal(signal.SIGTERM, lambda *_: None)  # woken through the pipe instead
    signal.signal(signal.SIGCHLD, lambda *_: None)  # likewise: a child to reap (the program, or one re-parented)
    lock = None
    try:
        spool = own_spool(launch)
        lock = take_lock(launch, spool)
        exit_path(spool, launch["job_id"], launch["run"]).unlink(missing_ok=True)  # another state's, of this number
        # the starter gone already: a controller started since may have looked for the lock before it was taken
        if select.select([starter], [], [], 0)[0]:
            raise StartError("the controller stopped before the program started")
        script = write_script(launch, spool)
        pid = start(launch, script)
    except StartError as e:
        if lock is not None:
            let_go(*lock)
        say({"failed": str(e)})
        return 0
    say({"started": {"pid": pid}})
    status = supervise(pid, float(launch.get("kill_wait_s", 30.0)), stop_r, starter, commands, launch)
    ended_at = WallClock().now()  # the job's end is its script's, as slurmstepd reports a batch step's
    code = os.waitstatus_to_exitcode(status)
    ended = {"exit_code": max(code, 0), "signal": -code if code < 0 else 0}
    try:  # before the rest goes: a controller away meanwhile reads it when it starts again (run_exits.py)
        record_exit(exit_path(launch["spool"], launch["job_id"], launch["run"]), ended["exit_code"], ended["signal"],
                    ended_at)
    except OSError:  # (a full disk: the restart then ends the run at its own time)
        pass
    end_all(os.getpid())  # what the script left running, in its session or not: the job has ended
    script.unlink(missing_ok=True)
    let_go(*lock)  # after every process of the job: a restarted controller starts on its IPUs only then
    say({"ended": ended})
    return 0


def say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class StartError(Exception):
    pass


class Lines:
    """JSON lines from a file descriptor, read without a buffer that select() cannot see."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def next(self) -> str | None:
        """The next whole line, blocking until it comes; None at the end."""
        while b"\n" not in self.buffer:
            if not self.read():
                return None
        line, self.buffer = self.buffer.split(b"\n", 1)  # the lines after it stay for pop()
        return line.decode()

    def read(self) -> bool:
        """Read what is there (once); False at the end."""
        chunk = os.read(self.fd, 65536)
        self.buffer += chunk
        self.closed = not chunk
        return bool(chunk)

    def pop(self) -> list[str]:
        """Every whole line read so far."""
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line.decode() for line in lines if line.strip()]


def own_spool(launch: dict) -> Path:
    """The spool folder, made if missing: one that only this supervisor's user may write in (else another user could
    swap a script or a lock, or read a script)."""
    spool = Path(launch["spool"])
    spool.mkdir(mode=0o711, exist_ok=True)
    if not is_own(str(spool)):
        raise StartError(f"the spool folder {spool} is not this controller's own (a link, another user's, or"
                         " writable by others); remove it, or restart the controller: it then names a new one")
    return spool


def take_lock(launch: dict, spool: Path) -> tuple[Path, int]:
    """The run's lock (run_locks.py), held until this supervisor exits: while it is, the program may be alive."""
    path = lock_path(spool, launch["job_id"], launch["run"])
    try:
        return path, hold(path)
    except BlockingIOError:
        raise StartError(f"another supervisor holds {path}: a run of this job with the same number is alive") from None
    except OSError as e:
        raise StartError(f"the run's lock {path} cannot be made ({e.strerror})") from None


def write_script(launch: dict, spool: Path) -> Path:
    """The script as a file the job's user may run and nobody else may read, in the spool folder."""
    path = spool / f"job{launch['job_id']}.run{launch['run']}.script"
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w") as f:
        f.write(launch["script"])
    user = launch.get("user")
    if user:
        os.chown(path, user["uid"], user["gid"])
    return path


def start(launch: dict, script: Path) -> int:
    """Fork the program: its own session, the user's ids, its working directory and output files, then exec. What
    fails before exec comes back through a pipe, in words."""
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # the child: nothing here may return
        os.close(err_r)
        try:
            become(launch, script)
        except BaseException as e:  # noqa: BLE001 - reported, then the child ends
            os.write(err_w, str(e).encode() or type(e).__name__.encode())
        os._exit(127)
    os.close(err_w)
    why = until_exec(pid, err_r)
    if why != "":
        script.unlink(missing_ok=True)
        raise StartError(why or f"the program's process stopped before its exec and was killed after {EXEC_WAIT_S:.0f} s"
                                " (a kill -STOP from the job's user?); submit it again")
    return pid


def become(launch: dict, script: Path) -> None:
    os.setsid()
    user = launch.get("user")
    if user:
        os.setgroups(user["groups"])
        os.setgid(user["gid"])
        os.setuid(user["uid"])
    cwd = launch["cwd"]
    try:
        os.chdir(cwd)
    except OSError as e:
        raise StartError(f"the working directory {cwd} cannot be entered ({e.strerror}); give --chdir a directory"
                         " the job's user may enter") from None
    fresh = launch.get("fresh")  # None: opened as the job's user's account, whose permissions decide
    append = bool(launch.get("append"))
    mark = launch.get("mark")
    out = open_output(launch["stdout"], "output", fresh, append, mark)
    err = open_output(launch["stderr"], "error", fresh, append, mark) if launch.get("stderr") not in (
        None, launch["stdout"]) else out
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    try:
        # poprun passes on no signal this supervisor sent: it signals poprun's instances itself (launcher.py)
        env = {**with_login(launch["env"], os.getuid()), "VIPU_SUPERVISOR_PID": str(os.getppid()),
               # as slurmd sets them in a batch job: the account it runs as, and the script's own pid
               "SLURM_JOB_UID": str(os.getuid()), "SLURM_JOB_GID": str(os.getgid()), "SLURM_TASK_PID": str(os.getpid())}
        env, said = applied(env, socket.gethostname())  # the submitter's soft limits, last, as slurmstepd
        os.write(2, "".join(f"{line}\n" for line in said).encode())
        os.execve(str(script), [str(script), *launch.get("args", [])], env)
    except OSError as e:  # the kernel names the script; the user needs the #! line that failed
        raise StartError(cannot_exec(script, e)) from None


def cannot_exec(script: Path, e: OSError) -> str:
    """Why the batch script could not run, in terms of its #! line."""
    with open(script, "rb") as f:
        line = f.readline(4096).decode(errors="replace").strip()
    interpreter = line[2:].split()[0] if line.startswith("#!") and line[2:].split() else line
    where = socket.gethostname()
    if e.errno == errno.ENOENT:
        return (f"its interpreter {interpreter} (the script's first line, {line}) does not exist on {where}; fix"
                " that line, e.g. #!/bin/bash")
    if e.errno == errno.EACCES:
        return f"its interpreter {interpreter} (the script's first line) may not be run by the job's user on {where}"
    return f"its first line {line} could not be run on {where}: {e.strerror}"


def open_output(path: str, what: str, fresh: list[str] | None = None, append: bool = False,
                mark: str | None = None) -> int:
    """The output file, opened as the job's user (truncated, as sbatch's default --open-mode; `append`: added to,
    as --open-mode=append). `fresh`, for a run as
    the controller's own user: never through a symlink, and a new file if it is one of these (output_folder.py's
    rule, which the controller checked as the run started: what appeared since is not written over); one it makes
    new carries `mark`, so the user's next job may write over it as sbatch's rerun does."""
    missing = missing_folder(what, path)
    if missing:
        raise StartError(missing)
    try:
        guard = 0 if fresh is None else os.O_NOFOLLOW | (os.O_EXCL if path in fresh else 0)
        # O_APPEND either way: slurmstepd's CANCELLED line is appended through a descriptor of its own, and the
        # program's text after its SIGTERM was written over it from the program's older offset (walk44)
        mode = os.O_APPEND | (0 if append else os.O_TRUNC)
        # O_NONBLOCK: a FIFO nobody reads would hold this open, and with it the supervisor, past any cancel
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode | guard | os.O_NONBLOCK, 0o644)
        os.set_blocking(fd, True)  # the program writes as to any file
    except OSError as e:
        if e.errno == errno.ENXIO and _is_fifo(path):
            raise StartError(f"{what} file {path} is a FIFO that nobody reads, and the job would wait on it for ever;"
                             f" start its reader first, or give --{what} a file") from None
        if e.errno == errno.ENXIO:  # a Unix socket, or a device with nothing behind it: open() can write to neither
            raise StartError(f"{what} file {path} is a socket or a device file that cannot be opened; give --{what}"
                             " a file") from None
        if fresh is not None and e.errno in (errno.EEXIST, errno.ELOOP):
            raise StartError(f"{what} file {path} appeared as the run started (a file or a symlink the controller did"
                             f" not make for this job), and is not written over: remove it, or give --{what} a new"
                             " file") from None
        raise StartError(f"{what} file {path} cannot be written by the job's user ({e.strerror})") from None
    if fresh is not None and path in fresh and mark is not None:  # made now, as the controller's user
        mark_writer(fd, mark)
    return fd


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def supervise(pid: int, kill_wait_s: float, stop_r: int, starter: int, commands: Lines | None = None,
              launch: dict | None = None) -> int:
    """Wait for the program; on a stop (SIGTERM, or the starter gone) SIGTERM all its processes, and SIGKILL them
    after the grace period; a {"signal": N} command signals it (command()). What was re-parented here and has ended
    is reaped as it goes. Returns the program's wait status."""
    program = os.pidfd_open(pid)
    watched = [program, stop_r, starter]
    root = os.getpid()
    if commands is not None and not commands.closed:
        watched.append(commands.fd)
        for line in commands.pop():  # sent before the program started
            command(pid, line, launch)
    kill_at = None
    while True:
        timeout = None if kill_at is None else max(0.0, kill_at - time.monotonic())
        ready, _, _ = select.select(watched, [], [], timeout)
        stop = starter in ready
        if stop_r in ready:  # the signals heard, by number: SIGCHLD only asks for a reap
            stop |= any(sig != signal.SIGCHLD for sig in os.read(stop_r, 512))
        ended = reap()
        if pid in ended:
            os.close(program)
            return ended[pid]
        if commands is not None and commands.fd in ready:
            if not commands.read():
                watched.remove(commands.fd)  # the launcher closed it: no more commands
            for line in commands.pop():
                command(pid, line, launch)
        if starter in ready:
            watched.remove(starter)  # stays readable: looked at once
        if stop and kill_at is None:
            signal_all(pid, signal.SIGTERM, root)
            kill_at = time.monotonic() + kill_wait_s
        elif kill_at is not None and time.monotonic() >= kill_at:
            signal_all(pid, signal.SIGKILL, root)
            kill_at = time.monotonic() + 3600  # once: the processes are gone or cannot be killed harder


def command(pid: int, line: str, launch: dict | None = None) -> None:
    """One command line from the launcher: {"ending": STATE} (a stop's, before its SIGTERM) says the job's end in its
    error file (said_stopped); {"signal": N, "to": T} sends N to the program (the group exists while the
    program is not reaped, so the signal cannot reach another's): T "full" (also when not given) the script and all
    it started, "batch" the script's own process alone, "children" all it started but the script (scancel -f, -b,
    and its default, which signals a job's steps and not its batch script). All it started: every process below
    this supervisor (step_processes.py), in the script's session or not."""
    try:
        message = json.loads(line)
        if "ending" in message:
            said_stopped(launch or {}, str(message["ending"]))
            return
        sig, to = int(message["signal"]), message.get("to", "full")
        if to == "batch":
            os.kill(pid, sig)
        elif to == "children":
            for member, _ in below(os.getpid()):
                if member != pid:
                    kill(member, sig)
        else:
            signal_all(pid, sig, os.getpid())
    except (ValueError, KeyError, TypeError, OSError, AttributeError):  # a line it cannot read, a refused signal
        pass


# slurmstepd's words after CANCELLED AT TIME for the batch step of a job stopped so, by the signal slurmd passes it
# (Slurm 22.05 src/slurmd/slurmstepd/req.c _handle_signal_container): SIG_TIME_LIMIT, SIG_PREEMPTED (a preemption's
# requeue too: slurmctld's kill is REQUEST_KILL_PREEMPTED), SIG_NODE_FAIL (on the nodes still up), SIG_REQUEUED
# (scontrol requeue: the job PENDING in the kill); a plain SIGTERM (scancel) none
DUE_TO = {"TIMEOUT": " DUE TO TIME LIMIT", "PREEMPTED": " DUE TO PREEMPTION",
          "NODE_FAIL": " DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS", "REQUEUED": " DUE TO JOB REQUEUE"}
SAID = {"CANCELLED", *DUE_TO}


def said_stopped(launch: dict, ending: str) -> None:
    """slurmstepd's line for a job stopped from outside (cancelled, timed out, preempted, node-failed, requeued),
    once, at the end of its error file (its output file without -e):
    `slurmstepd-ag00: error: *** JOB 16 ON ag00 CANCELLED AT 2026-11-29T12:53:34 DUE TO TIME LIMIT ***`,
    the time this machine's local time, as slurm_make_time_str gives it. Written as the job's user (user_files.py),
    appended to what the program wrote; a file it may not open is left as it is (the job's end is in its state)."""
    path = launch.get("stderr") or launch.get("stdout")
    if ending not in SAID or not path or launch.get("said"):
        return
    launch["said"] = True
    from vipu.partition.node_names import expand

    listed = launch.get("env", {}).get("SLURM_JOB_NODELIST")
    try:
        nodes = expand(listed) if listed else [socket.gethostname()]
    except ValueError:  # (the controller wrote it: not to be)
        nodes = [socket.gethostname()]
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(WallClock().now()))
    text = (f"slurmstepd-{nodes[0]}: error: *** JOB {launch.get('job_id')} ON {nodes[0]} CANCELLED AT {at}"
            f"{DUE_TO.get(ending, '')} ***\n")
    from vipu.jobs.programs.user_files import open_as

    try:  # as the job's user: root appending by path would follow a folder the user swapped for a symlink
        # O_NONBLOCK, and a regular file only: the stop waits for this line, so a FIFO the user put there must not hold
        # it (the SIGTERM and SIGKILL after it would never come)
        fd = open_as(path, launch.get("user"), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, text.encode())
    except OSError:
        pass
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
