"""Start-up times a user waits for on every command: a `vipu` CLI call, and a fresh controller until it serves.

Run: .venv/bin/python bench/bench_startup.py [--repeat 7]
Medians of --repeat runs, wall-clock on this machine: `vipu --version` (the CLI's start alone), `vipu queue` against
an empty controller (start, one call, a table), and `vipu-server --ray off` on a fresh state folder until it answers.
A restart over many stored jobs is bench_recovery.py's (--jobs N).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_recovery import wait_ready
from live_server import start_server

BIN = Path(sys.executable).parent


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def cli_seconds(port: int, args: list[str], repeat: int) -> float:
    env = {**os.environ, "VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(port)}
    return statistics.median(
        timed(lambda: subprocess.run([str(BIN / "vipu"), *args], env=env, check=True, capture_output=True))
        for _ in range(repeat))


def controller_seconds(repeat: int) -> float:
    def once() -> float:
        with tempfile.TemporaryDirectory() as state:
            start = time.perf_counter()
            proc, port = start_server(state, "bow-pod64")
            ready = time.perf_counter() - start + wait_ready(port)
            proc.terminate()
            proc.wait()
            return ready

    return statistics.median(once() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"# bench_startup: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()} (Python"
          f" {platform.python_version()}); medians of {args.repeat}")
    with tempfile.TemporaryDirectory() as state:
        proc, port = start_server(state, "bow-pod64")
        for command in (["--version"], ["queue"]):
            print(f"vipu {' '.join(command):<10} {cli_seconds(port, command, args.repeat):.3f} s")
        proc.terminate()
        proc.wait()
    print(f"vipu-server, fresh state, until it serves: {controller_seconds(args.repeat):.3f} s")


if __name__ == "__main__":
    main()
