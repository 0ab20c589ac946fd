"""Where the supervisors of users' programs run: on this machine (`--ray off`), or on the Ray node that holds the
job's machines, through one long-lived actor per node that does the same there.

Why each supervisor is started and waited for by a thread of its own: the kernel sends a child its parent-death
signal when the *thread* that forked it ends, so a supervisor started from a short-lived thread would stop its
program for nothing; a thread that lives exactly as long as the supervisor cannot. Nothing here holds the
controller's lock: starting a program (an interpreter and a fork) and waiting for it happen beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

TAIL_BYTES = 1 << 20  # `vipu logs` shows at most the last MiB of a program's output


class Steps:
    """The supervisors (stepd.py) of the runs on one machine, by key."""

    def __init__(self, spool: str):
        self.spool = spool  # where scripts are written while they run
        self._runs: dict[str, _Step] = {}
        self._lock = threading.Lock()

    def start(self, key: str, launch: dict) -> None:
        """Start a supervisor for `launch` (stepd's JSON, without its spool) in a thread of its own."""
        step = _Step({**launch, "spool": self.spool})
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

    def terminate(self, key: str) -> None:
        """Stop the run: its supervisor sends SIGTERM to the program's group, and SIGKILL after its grace."""
        step = self._runs.get(key)
        if step is not None:
            step.terminate()

    def terminate_all(self) -> None:
        with self._lock:
            steps = list(self._runs.values())
        for step in steps:
            step.terminate()

    @staticmethod
    def tail(path: str, max_bytes: int = TAIL_BYTES) -> tuple[str, bool]:
        """The end of a program's output file, and whether anything before it was left out ("" while none)."""
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - max_bytes))
                data = f.read(max_bytes)
        except FileNotFoundError:
            return "", False
        return data.decode(errors="replace"), size > max_bytes


class _Step:
    def __init__(self, launch: dict):
        self.launch = launch
        self.result: dict = {"failed": "its supervisor did not start"}
        self.done = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "vipu.jobs.programs.stepd"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if self._stop.is_set():  # stopped before its supervisor existed
                self._proc.terminate()
            self._proc.stdin.write(json.dumps(self.launch))
            self._proc.stdin.close()
            for line in self._proc.stdout:
                message = json.loads(line)
                if "ended" in message or "failed" in message:
                    self.result = message
            errors = self._proc.stderr.read().strip()
            if self._proc.wait() != 0 and "ended" not in self.result:
                self.result = {"failed": f"its supervisor ended with code {self._proc.returncode}: {errors[-500:]}"}
        except Exception as e:  # noqa: BLE001 - the run fails, saying why
            self.result = {"failed": f"its supervisor could not run: {type(e).__name__}: {e}"}
        finally:
            self.done.set()

    def terminate(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()


def local_spool(state_dir: Path | None) -> str:
    """This machine's spool folder for scripts while they run."""
    base = Path(state_dir) if state_dir is not None else Path(os.environ.get("TMPDIR", "/tmp"))
    return str(base / "spool")


class NodeSteps:
    """One per Ray node: the Steps of the programs that run there (a threaded actor: waits beside starts)."""

    def __init__(self, spool: str):
        self.steps = Steps(spool)

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def start(self, key: str, launch: dict) -> None:
        self.steps.start(key, launch)

    def wait(self, key: str, timeout: float | None = None) -> dict | None:
        return self.steps.wait(key, timeout)

    def terminate(self, key: str) -> None:
        self.steps.terminate(key)

    def terminate_all(self) -> None:
        self.steps.terminate_all()

    def tail(self, path: str, max_bytes: int = TAIL_BYTES) -> tuple[str, bool]:
        return Steps.tail(path, max_bytes)
