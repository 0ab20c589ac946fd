"""Where the supervisors of users' programs run: on this machine (`--ray off`), or on the Ray node that holds the
job's machines, through one long-lived actor per node that does the same there.

Why a thread for each supervisor: starting one (an interpreter, forks) and waiting for it happen beside the
controller's lock, never under it.
"""

from __future__ import annotations

import codecs
import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

from vipu.jobs.programs.run_exits import exit_path, recorded_exit
from vipu.jobs.programs.run_locks import held_here, left_running
from vipu.jobs.programs.spool import found_own
from vipu.jobs.programs.user_files import open_as

TAIL_BYTES = 1 << 20  # `vipu logs` shows at most the last MiB of a program's output


class Steps:
    """The supervisors (stepd.py) of the runs on one machine, by key."""

    def __init__(self) -> None:
        self._runs: dict[str, _Step] = {}
        self._lock = threading.Lock()

    def start(self, key: str, launch: dict) -> None:
        """Start a supervisor for `launch` (stepd's JSON) in a thread of its own."""
        step = _Step(launch)
        with self._lock:
            self._runs[key] = step
        threading.Thread(target=step.run, name=f"vipu-stepd-{key}", daemon=True).start()

    def wait(self, key: str, timeout: float | None = None) -> dict | None:
        """The run's end, once known: {"ended": {"exit_code", "signal"}} or {"failed": why}; None on timeout."""
        step = self._runs[key]
        if not step.done.wait(timeout):
            return None
        with self._lock:
            self._runs.pop(key, None)
        return step.result

    def terminate(self, key: str, ending: str | None = None) -> None:
        """Stop the run: its supervisor sends SIGTERM to the program's group, and SIGKILL after its grace; `ending`:
        the job's state, which it says in the job's error file as slurmstepd does."""
        step = self._runs.get(key)
        if step is not None:
            step.terminate(ending)

    def signal(self, key: str, sig: int, to: str = "full") -> bool:
        """Send `sig` to the run's program, `to` which of its processes (stepd.command); it goes on running. False
        if the run is not here (it ended)."""
        step = self._runs.get(key)
        return step is not None and step.signal(sig, to)

    @staticmethod
    def forget_exit(path: str) -> None:
        """The supervisor's record of how its program ended (run_exits.py): the controller has written the end."""
        Path(path).unlink(missing_ok=True)

    def terminate_all(self) -> None:
        with self._lock:
            steps = list(self._runs.values())
        for step in steps:
            step.terminate()

    @staticmethod
    def tail(path: str, max_bytes: int = TAIL_BYTES, user: dict | None = None) -> tuple[str, bool]:
        """The end of a program's output file, and whether anything before it was left out ("" while none). Never
        through a symlink, and only a regular file with one name (not a hard link to another file), which a job's
        user could otherwise point at a file only the controller may read; O_NONBLOCK: a FIFO put there must not
        stop the read. `user` ({uid, gid, groups}, under --secure): opened as that account (user_files.open_as),
        since the job's user may also swap a folder of the path for a symlink once the run has ended."""
        read = _read_checked(path, user, lambda size: max(0, size - max_bytes), max_bytes)
        if isinstance(read, str):
            return read, False
        data, start, size = read
        return data.decode(errors="replace"), start > 0

    @staticmethod
    def read_after(path: str, offset: int | None, max_bytes: int = TAIL_BYTES, user: dict | None = None,
                   whole: bool = True, partial: bool = False) -> tuple[list[str], int, str]:
        """`vipu logs -f`: the lines of a program's output file from byte `offset` on (None: from the first line
        that starts in its last `max_bytes`, as `vipu logs` shows it), at most `max_bytes` of them, the offset
        to go on from, and why it cannot be read ("" if it can, or while there is no file). `whole`: only whole
        lines (the program may be writing the rest), but for a line longer than `max_bytes`, which is cut there; else
        the last line too once the read reaches the file's end.
        `partial`: the text as far as it has come, to its last whole character, cut at newlines only (a carriage
        return stays in its line, as tail -f shows a progress bar); the last item is the line not ended yet, ""
        if the text ends with a newline. Opened as tail() opens it; a file cut shorter than `offset` is read from
        its start again, said in a line, as tail -f says it."""
        said = []

        def start_at(size: int) -> int:
            if offset is None:
                return max(0, size - max_bytes)
            if size < offset:
                said.append(f"({path} was truncated: read from its start again)")
                return 0
            return offset

        read = _read_checked(path, user, start_at, max_bytes)
        if isinstance(read, str):
            return [], offset or 0, read
        data, start, size = read
        if offset is None and start > 0:  # its first line may be cut: from the next on
            cut = data.find(b"\n") + 1
            data, start = data[cut:], start + cut
            said.append(f"(only the end of {path} is shown)")
        # nothing more comes: the program has ended and this read reached the file's end (one that stopped at
        # max_bytes has the rest of its last line, or character, behind it)
        last = not whole and start + len(data) >= size
        if partial:  # (a character the read's end cut waits for its other bytes, unless nothing more comes)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = decoder.decode(data, final=last)
            # (a line said above an empty text: the text still ends in "", so no line of vipu's is left open)
            return said + (text.split("\n") if text or said else []), start + len(data) - len(decoder.getstate()[0]), ""
        keep = data.rfind(b"\n") + 1
        if last or (keep == 0 and len(data) >= max_bytes):
            keep = len(data)
        return said + output_lines(data[:keep].decode(errors="replace")), start + keep, ""


def output_lines(text: str) -> list[str]:
    """A program's output cut into lines at newlines only, as cat shows them: a carriage return stays in its line,
    where a terminal shows a progress bar's last state (str.splitlines would make each update a line)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _read_checked(path: str, user: dict | None, start_at, max_bytes: int) -> tuple[bytes, int, int] | str:
    """At most `max_bytes` of a program's output file from `start_at(its size)`, as (data, where they start, the
    size), opened as Steps.tail says; or a line saying why it is not shown ("" while there is no file)."""
    try:
        fd = open_as(path, user, _READ)
    except FileNotFoundError:
        return ""
    except OSError as e:
        return f"(the output file {path} is not shown: {e.strerror.lower()})"
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return f"(the output file {path} is not shown: not a regular file with one name)"
        size = f.seek(0, os.SEEK_END)
        start = start_at(size)
        f.seek(start)
        return f.read(max_bytes), start, size


_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _Step:
    def __init__(self, launch: dict):
        self.launch = launch
        self.result: dict = {"failed": "its supervisor ended before it said how the program did"}
        self.done = threading.Event()
        self._supervisor: int | None = None  # its pid, once it has said it
        self._stop = threading.Event()
        self._commands = None  # the supervisor's stdin, open while it runs: signal() writes to it
        self._early: list[tuple[int, str]] | None = []  # (signal, to) asked for before the launch: sent right after
        # (None once the supervisor has ended)
        self._writing = threading.Lock()

    def run(self) -> None:
        try:
            # -P and cwd "/": `python -m` puts its working directory first on sys.path, and the controller's may be
            # one its users write in (a json.py there ran as root before the job's user was taken on: walk44)
            proc = subprocess.Popen([sys.executable, "-P", "-m", "vipu.jobs.programs.stepd"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
            first = json.loads(proc.stdout.readline() or "{}")
            self._supervisor = first.get("supervisor")
            if self._supervisor is None:
                self.result = {"failed": f"its supervisor did not start: {proc.stderr.read().strip()[-500:]}"}
                return
            if self._stop.is_set():  # stopped before the supervisor was known
                self.terminate()
            with self._writing:
                early = [_signal(sig, to) for sig, to in self._early]
                proc.stdin.write("".join(json.dumps(m) + "\n" for m in [self.launch, *early]))
                proc.stdin.flush()
                self._commands = proc.stdin
            for line in proc.stdout:  # until the supervisor ends: it holds the pipe, not the process started here
                message = json.loads(line)
                if "ended" in message or "failed" in message:
                    self.result = message
            with self._writing:
                self._commands, self._early = None, None
                proc.stdin.close()
            proc.wait()
        except Exception as e:  # noqa: BLE001 - the run fails, saying why
            self.result = {"failed": f"its supervisor could not run: {type(e).__name__}: {e}"}
        finally:
            self.done.set()

    def signal(self, sig: int, to: str = "full") -> bool:
        """Ask the supervisor to send `sig` to the program (`to`: stepd.command); False if it no longer takes
        commands."""
        with self._writing:
            if self.done.is_set() or self._early is None:
                return False
            if self._commands is None:  # its supervisor is starting: the signal follows the launch
                self._early.append((sig, to))
                return True
            try:
                self._commands.write(json.dumps(_signal(sig, to)) + "\n")
                self._commands.flush()
            except (BrokenPipeError, ValueError):  # it has just ended
                return False
            return True

    def terminate(self, ending: str | None = None) -> None:
        """SIGTERM to the supervisor; `ending`, how the job ended (TIMEOUT, CANCELLED, ...), sent first for the line
        it writes into the job's error file (stepd.said_stopped)."""
        self._stop.set()
        if ending is not None:
            with self._writing:
                try:
                    if self._commands is not None and not self.done.is_set():
                        self._commands.write(json.dumps({"ending": ending}) + "\n")
                        self._commands.flush()
                except (BrokenPipeError, ValueError):  # it has just ended
                    pass
        if self._supervisor is not None and not self.done.is_set():
            try:
                os.kill(self._supervisor, signal.SIGTERM)
            except ProcessLookupError:
                pass


def call_on(host, method: str, *args, wait: bool = True):
    """A Steps method, here (a Steps) or on a node's actor (a NodeSteps); an actor's not waited for unless `wait`."""
    if isinstance(host, Steps):
        return getattr(host, method)(*args)
    import ray

    ref = getattr(host, method).remote(*args)
    return ray.get(ref) if wait else None


def _signal(sig: int, to: str) -> dict:
    """The supervisor's command for scancel --signal (stepd.py)."""
    return {"signal": sig, "to": to}


class NodeSteps:
    """One per Ray node: the Steps of the programs that run there (a threaded actor: waits beside starts)."""

    def __init__(self) -> None:
        self.steps = Steps()

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def start(self, key: str, launch: dict) -> None:
        env = {**launch["env"], "VIPU_RAY_NODE": self.node()}  # which node it ran on, for the program and tests
        self.steps.start(key, {**launch, "env": env})

    def wait(self, key: str, timeout: float | None = None) -> dict | None:
        return self.steps.wait(key, timeout)

    def terminate(self, key: str, ending: str | None = None) -> None:
        self.steps.terminate(key, ending)

    def signal(self, key: str, sig: int, to: str = "full") -> bool:
        return self.steps.signal(key, sig, to)

    def terminate_all(self) -> None:
        self.steps.terminate_all()

    def forget_exit(self, path: str) -> None:
        Steps.forget_exit(path)

    @staticmethod
    def recorded_exit(spool: str, job_id: int, run: int) -> dict | None:
        """What the supervisor of the job's run number `run` recorded of its program's end in `spool` on this node
        (run_exits.py), for a restarted controller; None if nothing, or if the folder is not the controller's user's
        own (anyone may make a folder of that name in /tmp: spool.py)."""
        if not found_own(spool):
            return None
        return recorded_exit(exit_path(spool, job_id, run))

    @staticmethod
    def left_running(spool: str, job_id: int) -> dict[str, int]:
        """The job's runs whose supervisors still hold their locks in `spool` on this node (run_locks.py): lock ->
        pid."""
        if not found_own(spool):
            return {}
        return {str(path): pid for path, pid in left_running(spool, job_id).items()}

    @staticmethod
    def held(paths: list[str]) -> list[str]:
        """Those of the locks at `paths` on this node that a supervisor still holds."""
        return held_here(paths)

    def tail(self, path: str, max_bytes: int = TAIL_BYTES, user: dict | None = None) -> tuple[str, bool]:
        return Steps.tail(path, max_bytes, user)

    def read_after(self, path: str, offset: int | None, max_bytes: int = TAIL_BYTES, user: dict | None = None,
                   whole: bool = True, partial: bool = False) -> tuple[list[str], int, str]:
        return Steps.read_after(path, offset, max_bytes, user, whole, partial)
