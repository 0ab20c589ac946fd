"""Where a SubmitJob call's CPU goes inside a live vipu-server, beside the same handler alone in this process, in one
run: what bench_cli.py's handler figure (in-process) leaves out.

Run: .venv/bin/python bench/bench_submit_parts.py [--jobs 3000] [--clients 1,4]

The server is `vipu-server --ray off` started by this script with each part below timed by the CPU clock of the
thread it runs on (time.thread_time: user + system of that thread alone, so waiting, and other threads, are not
counted). Clients (bench_cli.submitter: one held job a call, as bench_cli measures the rate) make --jobs calls after
a warm-up; the parts are averaged over those calls. Then the same parts of the handler alone, in this process
(bench_cli.handler_cpu_us: no gRPC, the controller's log on), twice: one call after another, and with the CPU's
private caches (L1 and L2) evicted before each call, as gRPC's core, the kernel and the clients evict them between a
server's calls. Last, the whole server process's CPU a call (every thread, /proc) for SubmitJob and for the empty
GetVersion call: their difference is the handler's CPU in the server. The timers cost a little CPU of their own in
every column.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

SPANS: dict[str, list] = defaultdict(lambda: [0, 0.0])  # part -> [times run, CPU seconds]
PARTS = (  # (name, what it is); in the order printed
    ("call", "the RPC thread, from the request log's interceptor in (every RPC thread's part below is in it)"),
    ("service", "  JobService: the request converted, the control plane called, the answer built"),
    ("checks", "    the spec (cached), the caller, before the lock"),
    ("queue", "    Scheduler.submit_many under the state lock: ids, limits, the job's record, the queue"),
    ("commit wait", "    the lock let go: the write queued, then waiting until it is in SQLite"),
    ("writer", "the store's writing thread: one INSERT into SQLite's WAL for what queued, and who waits told"),
    ("log", "the log writer's thread: the lifecycle line worked out, formatted and written"),
    ("gc", "the cycle collector, in whichever thread it ran"),
)
HANDLER = ("service", "writer", "log", "gc")  # the parts that add up to the handler alone (the others are within)


def timed(name: str, fn):
    def wrapper(*args, **kwargs):
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            span = SPANS[name]
            span[0] += 1
            span[1] += time.thread_time() - start

    return wrapper


_COLLECTING: dict[str, float] = {}  # the thread CPU clock as the running collection began


def collector(phase: str, info: dict) -> None:
    if phase == "start":
        _COLLECTING["at"] = time.thread_time()
    elif "at" in _COLLECTING:
        SPANS["gc"][0] += 1
        SPANS["gc"][1] += time.thread_time() - _COLLECTING.pop("at")


def install_timers() -> None:
    """Wrap each part (PARTS) in a CPU timer, in this process."""
    from vipu import store
    from vipu.control import job_ops, lock
    from vipu.scheduler import scheduler
    from vipu.server import job_service, log_format, request_log

    job_service.JobService._submit = timed("service", job_service.JobService._submit)
    job_ops.JobOps._checked = timed("checks", job_ops.JobOps._checked)
    scheduler.Scheduler.submit_many = timed("queue", scheduler.Scheduler.submit_many)
    lock.StateLock.__exit__ = timed("commit wait", lock.StateLock.__exit__)
    store.Store._write_queued = timed("writer", store.Store._write_queued)
    log_format.Writer._lines_of = timed("log", log_format.Writer._lines_of)
    log_format.Writer._write = timed("log", log_format.Writer._write)
    wrap = request_log.RequestLog.wrap
    request_log.RequestLog.wrap = lambda self, inner, method: timed("call", wrap(self, inner, method))
    gc.callbacks.append(collector)


EVICTED_BYTES = 16 << 20  # more than a core's L1 and L2 on the machines this runs on (4 MiB of L2 here)


def evicting():
    """What empties a core's private caches: a byte written in every 64-byte line of more memory than they hold."""
    memory, zeros = bytearray(EVICTED_BYTES), bytes(EVICTED_BYTES // 64)

    def evict() -> None:
        memory[::64] = zeros

    return evict


def per_call(calls: int) -> dict[str, float]:
    """CPU microseconds a call of each part, from SPANS, then reset."""
    out = {name: SPANS[name][1] / calls * 1e6 for name, _ in PARTS}
    SPANS.clear()
    return out


def serve(argv: list[str]) -> int:
    """The server side: vipu-server with the timers; SIGUSR1 writes the parts so far to $PARTS_FILE and resets."""
    install_timers()
    from vipu.server import app

    def report(*_) -> None:
        calls = max(SPANS["call"][0], 1)
        Path(os.environ["PARTS_FILE"]).write_text(json.dumps(per_call(calls)))

    signal.signal(signal.SIGUSR1, report)
    return app.main(argv)


def in_server(jobs: int, clients: int) -> tuple[dict[str, float], float, float]:
    """The parts (CPU us a call) in a live server, and the server's whole CPU us a call for SubmitJob and for the
    empty GetVersion."""
    import bench_cli
    from live_server import listening_port

    with tempfile.TemporaryDirectory() as state:
        parts_file = Path(state) / "parts.json"
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--pod", "bow-pod64", "--port", "0", "--state-dir", state,
             "--metrics-port", "0", "--ray", "off"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PARTS_FILE": str(parts_file)})
        try:
            server = bench_cli.Server(proc, listening_port(proc))
            bench_cli.measured(bench_cli.submitter, server, 300, clients)  # warm-up, then the parts from zero

            def parts() -> dict[str, float]:
                parts_file.unlink(missing_ok=True)
                proc.send_signal(signal.SIGUSR1)
                deadline = time.monotonic() + 10
                while not parts_file.exists() or not parts_file.stat().st_size:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the server did not report its parts")
                    time.sleep(0.01)
                return json.loads(parts_file.read_text())

            parts()
            _, submit_cpu = bench_cli.measured(bench_cli.submitter, server, jobs, clients)
            figures = parts()
            _, empty_cpu = bench_cli.measured(bench_cli.empty_caller, server, jobs, clients)
            return figures, submit_cpu, empty_cpu
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000, help="calls measured, per client count")
    parser.add_argument("--clients", default="1,4", help="client processes, e.g. 1,4")
    args = parser.parse_args()
    print(f"# bench_submit_parts: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}, {os.cpu_count()} cores,"
          f" Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}; knobs {vars(args)}")
    import bench_cli

    counts = [int(c) for c in args.clients.split(",")]
    servers = {clients: in_server(args.jobs, clients) for clients in counts}
    install_timers()
    bench_cli.handler_cpu_us(1000)  # warm-up, as the server's
    SPANS.clear()
    handler = bench_cli.handler_cpu_us(args.jobs)
    alone = per_call(args.jobs)
    bench_cli.handler_cpu_us(args.jobs, evicting())
    cold = per_call(args.jobs)
    heads = "".join(f"   server, {c} client{'s' if c > 1 else ''}" for c in counts)
    print(f"\n(CPU us a call){heads}   alone   alone, caches evicted   part")
    for name, what in PARTS:
        row = "".join(f" {servers[c][0][name]:19,.0f}" for c in counts)
        print(f"{name:<15}{row} {shown(alone[name]):>7} {shown(cold[name]):>23}   {what}")
    print(f"{'handler':<15}" + "".join(f" {servers[c][1] - servers[c][2]:19,.0f}" for c in counts)
          + f" {sum(alone[n] for n in HANDLER):7,.0f} {sum(cold[n] for n in HANDLER):23,.0f}   the server: its whole"
          " CPU a SubmitJob call less a GetVersion call's (every thread, /proc); alone: the sum of its parts (service,"
          " writer, log, gc)")
    print(f"{'SubmitJob':<15}" + "".join(f" {servers[c][1]:19,.0f}" for c in counts)
          + f"{'':32}   the server's whole CPU a SubmitJob call")
    print(f"{'GetVersion':<15}" + "".join(f" {servers[c][2]:19,.0f}" for c in counts)
          + f"{'':32}   the server's whole CPU an empty GetVersion call")
    print(f"{args.jobs:,} calls per client count (the held jobs stay queued); the parts are timed by their thread's"
          f" CPU clock (user + system). bench_cli's handler figure, the same calls alone (this process's CPU, every"
          f" thread): {handler:,.0f} us. Load average at the end {os.getloadavg()[0]:.1f}")


def shown(us: float) -> str:
    return f"{us:,.0f}" if us else "-"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(serve(sys.argv[2:]))
    main()
