"""`vipu` and `vipu-admin` calls of the tests, forked from a process that has already imported them
(tests/cli_fork_server.py): the same entry points, arguments, environment, folder and exit codes as the console
scripts, without a Python start and grpc's import each. One fork server per test process, started at the first call.
VIPU_TEST_SUBPROCESS=1 runs every call as its own process instead; a few tests always do (the console scripts
themselves: tests/cli/test_fast_path.py, tests/deploy/)."""

from __future__ import annotations

import atexit
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tests.cli_fork_server import ENTRIES

ROOT = Path(__file__).resolve().parents[1]


class ForkServer:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="vipu-forks-")
        self.socket = os.path.join(self.folder, "socket")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli_fork_server", self.socket], cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)  # as run_script
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"the CLI fork server did not start: {line!r}")
        self.calls = 0
        self._lock = threading.Lock()

    def run(self, script: str, args: list[str], env: dict, cwd, timeout: float) -> subprocess.CompletedProcess:
        with self._lock:
            self.calls += 1
            name = os.path.join(self.folder, str(self.calls))
        request = {"argv0": script, "entry": Path(script).name, "args": list(args), "env": dict(env),
                   "cwd": str(cwd) if cwd else os.getcwd(), "stdout": f"{name}.out", "stderr": f"{name}.err"}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(self.socket)
            conn.sendall((json.dumps(request) + "\n").encode())
            answer = conn.makefile()
            pid = self._number(answer.readline(), script)
            try:
                code = self._number(answer.readline(), script)
            except (socket.timeout, TimeoutError):
                os.kill(pid, 9)
                raise subprocess.TimeoutExpired([script, *args], timeout) from None
        out, err = (Path(f"{name}.{kind}").read_text() for kind in ("out", "err"))
        for kind in ("out", "err"):
            os.unlink(f"{name}.{kind}")
        return subprocess.CompletedProcess([script, *args], code, out, err)

    def _number(self, line: str, script: str) -> int:
        """A pid or an exit status from the fork server; none: it died, which says more than int('')."""
        if not line.strip():
            raise RuntimeError(f"the CLI fork server gave no answer for {script} (exit status {self.proc.poll()});"
                               " VIPU_TEST_SUBPROCESS=1 runs each call as its own process")
        return int(line)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_server: ForkServer | None = None
_starting = threading.Lock()


def run_script(script: str, args: list[str], env: dict, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    """The console script `script` (a path in the venv's bin) with these arguments, as subprocess.run would run it
    with capture_output and text."""
    global _server
    if Path(script).name not in ENTRIES or os.environ.get("VIPU_TEST_SUBPROCESS"):
        # stdin /dev/null whatever the test runner's is: `vipu submit` reads a script from a piped one
        return subprocess.run([script, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    with _starting:
        if _server is None:
            _server = ForkServer()
            atexit.register(_server.close)
    return _server.run(script, args, dict(os.environ) if env is None else env, cwd, timeout)


SHELL_SYNTAX = set("|&;<>()$`\\*?[#~\n")  # what sh would expand, redirect or chain: such a line goes to sh itself


def run_command_line(command: str, env: dict, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    """A command line of the docs as sh runs it (subprocess.run with shell=True): `[NAME=VALUE ...] vipu ARGS`
    through run_script, the assignments in its environment; any other line through sh."""
    words = [] if SHELL_SYNTAX & set(command) else shlex.split(command)
    assigned = {}
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0], re.S):
        name, value = words.pop(0).split("=", 1)
        assigned[name] = value
    if not words or words[0] not in ENTRIES:
        return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return run_script(str(Path(sys.executable).parent / words[0]), words[1:], {**env, **assigned}, cwd, timeout)
