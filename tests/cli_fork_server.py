"""A process that has imported what every `vipu` and `vipu-admin` call imports, and forks one child per command the
tests run (tests/cli_forks.py is the other end). A child is what the console script would be after its imports: it
takes the command's arguments, environment, folder and output files, runs the same entry point and exits as the
script would. Python's start and grpc's import were most of each call's CPU, and the suite makes thousands.

Run as `python -m tests.cli_fork_server SOCKET` from the repository. One request a connection, one JSON line:
{argv0, entry, args, env, cwd, stdout, stderr}. The answer: the child's pid, then its exit status as
subprocess gives it (negative: the signal that ended it), each on a line.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import signal
import socket
import sys
import threading
import traceback

ENTRIES = {"vipu": "vipu.cli.main:run", "vipu-admin": "vipu.cli.admin_commands:run"}


def preload() -> None:
    """What the commands import anyway, and nothing that reads the environment or the folder when imported."""
    import vipu.cli.admin_commands  # noqa: F401
    import vipu.cli.fast_path  # noqa: F401
    import vipu.cli.vipu_app  # noqa: F401
    import vipu.client  # noqa: F401
    import vipu.replay.simulation  # noqa: F401  (`vipu simulate`'s scheduler and replay: dozens of calls a suite)


def run_child(conn: socket.socket, request: dict) -> None:
    """The command, in the forked child; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        conn.sendall(f"{os.getpid()}\n".encode())
        conn.close()
        if request["cwd"]:
            os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.argv = [request["argv0"], *request["args"]]
        module, name = ENTRIES[request["entry"]].split(":")
        try:
            getattr(importlib.import_module(module), name)()
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:  # as the interpreter does with sys.exit("message")
                print(e.code, file=sys.stderr)
                code = 1
        # what the interpreter does at exit: wait for the threads, then the atexit functions
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - what an uncaught exception prints, then exit 1
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream: nothing left to write
            pass
    os._exit(code & 0xFF)


def serve(path: str) -> None:
    preload()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd hears of each child's end
    waiting: dict[int, socket.socket] = {}
    print("ready", flush=True)
    while os.getppid() == parent:  # the test process is gone: so are we
        ready, _, _ = select.select([listener, wake_r], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:  # the test stopped waiting (a timeout)
                    pass
                conn.close()
        if listener in ready:
            conn, _ = listener.accept()
            request = json.loads(conn.makefile().readline())
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                os.close(wake_r)
                os.close(wake_w)
                for other in waiting.values():
                    other.close()
                run_child(conn, request)
            waiting[pid] = conn


if __name__ == "__main__":
    serve(sys.argv[1])
