"""Where a live vipu-server's CPU goes while it takes one held job per SubmitJob call: a profile of every thread of
the server (yappi, CPU clock) under bench_cli's clients, printed as shares of the process's profiled CPU.

Run: .venv/bin/python bench/profile_submit.py [--jobs 3000] [--clients 1] [--top 25]
Needs yappi, which `make .venv/.installed` installs with the dev extras. A deterministic profiler slows
every Python call, here about threefold, so only the shares mean anything; bench_submit_parts.py gives each part's
CPU time without it.
"""

from __future__ import annotations

import argparse
import os
import platform
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (what, the functions whose time with their callees is that part); in the order printed
PARTS = (
    ("gRPC's server, the RPC thread's part", ("(_unary_response_in_pool)",)),
    ("  the request log's wrapper (request id, caller, metrics) and all below", ("request_log.py:72(behaviour)",)),
    ("    JobService (converted, checked, queued, answered)", ("(JobService._submit)",)),
    ("      Scheduler.submit_many under the state lock", ("(Scheduler.submit_many)",)),
    ("      the state lock let go: waiting for the store's write", ("(StateLock.__exit__)",)),
    ("gRPC's server, its polling thread", ("(_process_event_and_continue)",)),
    ("the store's writing thread", ("(Store._write_queued)",)),
    ("the log writer's thread", ("(Writer._lines_of)", "(Writer._write)")),
)
HANDING_OVER = ("_thread.lock", "_thread.RLock", "Condition.", "SimpleQueue", "Future.", "Event.wait")


def serve(argv: list[str]) -> int:
    """vipu-server; SIGUSR1 starts the profile, SIGUSR2 writes it to $PROFILE_FILE (pstats) and stops."""
    import yappi

    from vipu.server import app

    def start(*_) -> None:
        yappi.set_clock_type("cpu")
        yappi.clear_stats()
        yappi.start(builtins=True, profile_threads=True)

    def write(*_) -> None:
        yappi.stop()
        out = Path(os.environ["PROFILE_FILE"])
        yappi.get_func_stats().save(str(out.with_suffix(".tmp")), type="pstat")
        out.with_suffix(".tmp").rename(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, write)
    return app.main(argv)


def profiled(jobs: int, clients: int, folder: Path) -> pstats.Stats:
    import bench_cli
    from live_server import listening_port

    out = folder / "profile.pstat"
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--pod", "bow-pod64", "--port", "0", "--state-dir", str(folder),
         "--metrics-port", "0", "--ray", "off"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PROFILE_FILE": str(out)})
    try:
        server = bench_cli.Server(proc, listening_port(proc))
        bench_cli.measured(bench_cli.submitter, server, 300, clients)  # warm-up
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)  # the handler runs between two of the main thread's bytecodes
        bench_cli.measured(bench_cli.submitter, server, jobs, clients)
        proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 60
        while not out.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not write its profile")
            time.sleep(0.1)
        return pstats.Stats(str(out))
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000, help="calls profiled")
    parser.add_argument("--clients", type=int, default=1, help="client processes")
    parser.add_argument("--top", type=int, default=25, help="functions listed by their own CPU")
    args = parser.parse_args()
    print(f"# profile_submit: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}, {os.cpu_count()} cores, Python"
          f" {platform.python_version()}, load average {os.getloadavg()[0]:.1f}; knobs {vars(args)}")
    with tempfile.TemporaryDirectory() as state:
        stats = profiled(args.jobs, args.clients, Path(state))
    total = stats.total_tt
    rows = {f"{path}:{line}({name})": (calls, own, whole) for (path, line, name), (_, calls, own, whole, _) in
            stats.stats.items()}
    print(f"\nshare of the server's profiled CPU ({total:.2f} s for {args.jobs:,} calls), with callees")
    for what, keys in PARTS:
        whole = sum(w for name, (_, _, w) in rows.items() if any(key in name for key in keys))
        print(f"{whole / total:7.1%}   {what}")
    handing = sum(own for name, (_, own, _) in rows.items() if any(key in name for key in HANDING_OVER))
    print(f"{handing / total:7.1%}   in their own lines, the locks, conditions, queues, futures and events by which"
          " threads hand work over (gRPC's, the store's, the log's)")
    print(f"\nthe {args.top} functions with the most CPU in their own lines (calls a SubmitJob call, share)")
    for name, (calls, own, _) in sorted(rows.items(), key=lambda r: -r[1][1])[:args.top]:
        print(f"{calls / args.jobs:7.1f} {own / total:7.1%}   {shorter(name)}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def shorter(name: str) -> str:
    """A function's name with its file's folders cut to the package: vipu/..., grpc/..., threading.py."""
    for marker in ("/site-packages/", f"{Path(__file__).resolve().parent.parent}/", "/lib/python"):
        if marker in name:
            name = name.split(marker, 1)[1]
            return name.split("/", 1)[1] if marker == "/lib/python" else name
    return name


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(serve(sys.argv[2:]))
    main()
