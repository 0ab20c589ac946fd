"""Start a real vipu-server (the installed console script), or the bare gRPC server beside it, on a free port for a
benchmark."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def start_server(state_dir: str, pod: str = "bow-pod256", *extra: str) -> tuple[subprocess.Popen, int]:
    exe = Path(sys.executable).parent / "vipu-server"
    port = ["--port", "0"] if "--port" not in extra else []
    proc = subprocess.Popen(
        [str(exe), "--pod", pod, *port, "--state-dir", state_dir, "--metrics-port", "0", "--ray", "off", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    return proc, listening_port(proc)


def start_bare_server(*extra: str) -> tuple[subprocess.Popen, int]:
    """bench/bare_server.py: a gRPC server with nothing of vipu-sim in it, the transport's ceiling (--aio: gRPC's
    asyncio server)."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("bare_server.py")), *extra],
                            stdout=subprocess.PIPE, text=True)
    return proc, listening_port(proc)


def listening_port(proc: subprocess.Popen) -> int:
    """The port of the server's first line, which is kept as proc.banner (it names the metrics address too)."""
    proc.banner = proc.stdout.readline()
    return int(re.search(r"listening on \S+:(\d+)", proc.banner).group(1))


def timed_clients(target, args_per_client: list[tuple]) -> float:
    """Run one process per client, `target(*args, barrier)`; each connects, waits at the barrier, then works.
    Returns the wall-clock seconds from the barrier until the last client is done."""
    import multiprocessing
    import time

    barrier = multiprocessing.Barrier(len(args_per_client) + 1)
    procs = [multiprocessing.Process(target=target, args=(*args, barrier)) for args in args_per_client]
    for proc in procs:
        proc.start()
    barrier.wait()
    start = time.perf_counter()
    for proc in procs:
        proc.join()
    return time.perf_counter() - start
