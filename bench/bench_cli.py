"""The CLI and one job per SubmitJob call against Python's own floor, measured in one run (issue 26's goals).

Run: .venv/bin/python bench/bench_cli.py [--repeat 21] [--jobs 1000] [--rounds 5] [--only cli|rates] [--rpc-threads 2,3]

1. `vipu queue` and `vipu submit SPEC` (a held job) against a fresh `vipu-server --ray off`, each next to its floor:
   this Python starting, importing grpc and the generated stubs, and making the same RPC to the same server
   (ListJobs; SubmitJob with the same spec bytes). The runs alternate, floor and CLI, --repeat times each; the
   figures are medians, and the difference is the median of the pairs' differences. Goal: within 15 ms. The same
   runs' CPU time (user + system) is printed too: other work on a busy machine stretches wall-clock far more.
   The CLI ends with os._exit once its output is flushed (fast_path.leave), skipping the interpreter's teardown,
   which the floor pays; so a third run, the floor ending the same way, shows what is left beside that.
2. One held job per SubmitJob call, from 1 and 4 client processes, against bench/bare_server.py (empty GetVersion
   calls to a gRPC server with nothing of vipu-sim in it: the most a Python gRPC server answers here), and the same
   bare server on gRPC's asyncio server (does asyncio raise that ceiling?), and the same empty calls to vipu-server
   (its gRPC and interceptors without a handler), and the durable floor (bare_server.py --durable: the bare server
   answering SubmitJob with a parse, one durable SQLite insert and a reply, the least any durable SubmitJob does in
   Python), and that floor again with its insert on a writing thread of its own as vipu-server's store does
   (bare_server.py --write-thread). Each round measures all six, one after the other; medians of the rounds, and of
   their ratios. Goal: at least 70%. Each server's CPU time per call is
   printed too, and the SubmitJob handler alone, timed in this process without gRPC: the bare call's time plus the
   handler's is the most the ratio could be if gRPC added nothing to vipu-server's calls (the ceiling column). The
   handler's CPU in the server (SubmitJob's CPU a call less GetVersion's, both from vipu-server) is printed beside
   what the goal allows it: the bare call's CPU / 0.7, less vipu-server's GetVersion call's.
Clients connect before a barrier and the clock starts after it (live_server.timed_clients), so process start-up is
not counted in the rates. All wall-clock, on whatever else this machine is doing: compare figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import NamedTuple

import bench_submit
import grpc
from live_server import start_bare_server, start_server, timed_clients
from pydantic import BaseModel

from vipu.server import log_format
from vipu.store import Store
from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc

BIN = Path(sys.executable).parent
DEFAULT = "default"  # the server's own --rpc-threads
GOAL = 0.7  # issue 26: one job per SubmitJob call at least 70% of the bare server's calls/s
SPEC = json.dumps({"name": "bench", "ipus": 4, "time_limit": "10m", "hold": True, "user": "bench"}).encode()

# The floor: the least any Python client does for the same answer. Same interpreter, same site-packages.
FLOOR = {
    "queue": "import grpc, sys; from vipu.v1 import job_pb2 as j, job_pb2_grpc\n"
             "with grpc.insecure_channel(sys.argv[1]) as c:\n"
             "    job_pb2_grpc.JobServiceStub(c).ListJobs(j.ListJobsRequest(brief=True), timeout=10)",
    "submit": "import grpc, sys, uuid; from vipu.v1 import job_pb2 as j, job_pb2_grpc\n"
              "spec = open(sys.argv[2], 'rb').read()\n"
              "with grpc.insecure_channel(sys.argv[1]) as c:\n"
              "    job_pb2_grpc.JobServiceStub(c).SubmitJob(j.SubmitJobRequest(spec=spec,"
              " request_id=uuid.uuid4().hex), timeout=10)",
}
NO_TEARDOWN = "\nimport os; sys.stdout.flush(); os._exit(0)"  # as the CLI ends (vipu/cli/fast_path.py: leave)


def seconds(command: list[str], env: dict) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run of `command`."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cli_against_floor(port: int, folder: Path, repeat: int) -> dict[str, list[tuple[float, ...]]]:
    """Per command, wall-clock then CPU: (floor, floor without teardown, CLI, CLI - floor, CLI - floor without
    teardown) in seconds."""
    spec = folder / "held.json"
    spec.write_bytes(SPEC)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: bytecode cached
    env.update(VIPU_CLI_API_HOST="127.0.0.1", VIPU_CLI_API_PORT=str(port), VIPU_CLI_API_USER_ID="bench")
    address = f"127.0.0.1:{port}"
    commands = {
        "queue": ([address], [str(BIN / "vipu"), "queue"]),
        "submit": ([address, str(spec)], [str(BIN / "vipu"), "submit", str(spec)]),
    }
    result = {}
    for name, (floor_args, cli) in commands.items():
        floor = [sys.executable, "-c", FLOOR[name], *floor_args]
        quick = [sys.executable, "-c", FLOOR[name] + NO_TEARDOWN, *floor_args]
        seconds(floor, env), seconds(quick, env), seconds(cli, env)  # warm-up: bytecode written, files cached
        runs = [(seconds(floor, env), seconds(quick, env), seconds(cli, env)) for _ in range(repeat)]
        result[name] = [(statistics.median(f[k] for f, _, _ in runs), statistics.median(q[k] for _, q, _ in runs),
                         statistics.median(c[k] for _, _, c in runs),
                         statistics.median(c[k] - f[k] for f, _, c in runs),
                         statistics.median(c[k] - q[k] for _, q, c in runs)) for k in (0, 1)]
    return result


def submitter(port: int, count: int, barrier) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        submit = job_pb2_grpc.JobServiceStub(channel).SubmitJob
        submit(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=30)  # connected before the clock
        barrier.wait()
        for _ in range(count):
            submit(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=30)


def empty_caller(port: int, count: int, barrier) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        empty = partition_pb2_grpc.PartitionServiceStub(channel).GetVersion
        empty(p.GetVersionRequest(), timeout=30)
        barrier.wait()
        for _ in range(count):
            empty(p.GetVersionRequest(), timeout=30)


class Server(NamedTuple):
    proc: subprocess.Popen
    port: int

    def cpu_s(self) -> float:
        """The server process's CPU seconds so far, user + system, every thread (Linux's /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(target, server: Server, jobs: int, clients: int) -> tuple[float, float]:
    """Calls/s, and the server's CPU microseconds per call (what a busy machine's waits leave out)."""
    per_client = jobs // clients
    before = server.cpu_s()
    seconds_taken = timed_clients(target, [(server.port, per_client)] * clients)
    return per_client * clients / seconds_taken, (server.cpu_s() - before) / (per_client * clients) * 1e6


def submit_against_bare(jobs: int, rounds: int, threads: list[str]) -> dict[tuple, dict[str, float]]:
    """Per (server --rpc-threads, client count), medians of `rounds` rounds, each measuring the bare server (sync and
    asyncio) and vipu-server one after the other (so a change in the machine's speed hits all): calls/s and server
    CPU us per call of each, and SubmitJob's rate as a share of the bare sync server's (the median of the rounds'
    ratios)."""
    result = {}
    floor_state = tempfile.TemporaryDirectory()
    bare, aio = Server(*start_bare_server()), Server(*start_bare_server("--aio"))
    floor = Server(*start_bare_server("--durable", floor_state.name))
    handed = Server(*start_bare_server("--durable", str(Path(floor_state.name) / "handed"), "--write-thread"))
    try:
        for thread_count, clients in [(t, c) for t in threads for c in (1, 4)]:
            flags = ["--rpc-threads", thread_count] if thread_count != DEFAULT else []
            with tempfile.TemporaryDirectory() as state:
                ours = Server(*start_server(state, "bow-pod64", *flags))
                try:
                    runs = [(measured(empty_caller, bare, jobs, clients), measured(empty_caller, aio, jobs, clients),
                             measured(submitter, ours, jobs, clients), measured(empty_caller, ours, jobs, clients),
                             measured(submitter, floor, jobs, clients), measured(submitter, handed, jobs, clients))
                            for _ in range(rounds)]
                finally:
                    ours.proc.terminate()
                    ours.proc.wait()
            figures = {f"{name} {what}": statistics.median(run[k][i] for run in runs)
                       for k, name in enumerate(("bare", "aio", "ours", "empty", "floor", "handed"))
                       for i, what in enumerate(("rate", "cpu"))}
            figures["ratio"] = statistics.median(run[2][0] / run[0][0] for run in runs)
            figures["empty ratio"] = statistics.median(run[3][0] / run[0][0] for run in runs)
            figures["floor ratio"] = statistics.median(run[4][0] / run[0][0] for run in runs)
            figures["handed ratio"] = statistics.median(run[5][0] / run[0][0] for run in runs)
            figures["of floor"] = statistics.median(run[2][0] / run[4][0] for run in runs)
            result[thread_count, clients] = figures
    finally:
        for server in (bare, aio, floor, handed):
            server.proc.terminate()
            server.proc.wait()
        floor_state.cleanup()
    return result


class Record(BaseModel):
    doc: str


def commit_us(jobs: int) -> tuple[float, float]:
    """The store's commit alone, durable as a submission's (in the WAL before it returns): a record the size of a
    held job's (830 bytes of JSON) and a small one, as a submission commits its job and the next job id. Wall-clock
    and CPU microseconds a commit."""
    job, meta = Record(doc="x" * 820), Record(doc="1")
    with tempfile.TemporaryDirectory() as state:
        store = Store(Path(state) / "bench.sqlite3")
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            for k in range(jobs):
                store.commit([("job", str(k), job), ("meta", "next", meta)], [])
            return (time.perf_counter() - wall) / jobs * 1e6, (time.process_time() - cpu) / jobs * 1e6
        finally:
            store.close()


def handler_cpu_us(jobs: int, between=None) -> float:
    """The SubmitJob handler alone, in this process (bench_submit.handler_us), with the controller's log as it
    runs (a JSON line a submission, to /dev/null): CPU microseconds a call, of all this process's threads.
    `between`: called before each call (bench_submit.handler_us)."""
    with open(os.devnull, "w") as devnull:
        log_format.setup("json", "info", stream=devnull)
        try:
            return bench_submit.handler_us(jobs, "bow-pod64", time.process_time, between)
        finally:
            log_format.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="runs of each command and of its floor")
    parser.add_argument("--jobs", type=int, default=1000, help="calls per rate measurement")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the rate measurements")
    parser.add_argument("--only", choices=("cli", "rates"), help="measure only one of the two")
    parser.add_argument("--rpc-threads", default=DEFAULT,
                        help="vipu-server --rpc-threads values for the rates, e.g. 2,3,4 (the bare server keeps its 3)")
    args = parser.parse_args()
    print(f"# bench_cli: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}, {os.cpu_count()} cores, Python"
          f" {platform.python_version()}, load average {os.getloadavg()[0]:.1f}; knobs {vars(args)}")
    if args.only != "rates":
        print_cli(args.repeat)
    if args.only != "cli":
        print_rates(args.jobs, args.rounds, args.rpc_threads.split(","))


def print_cli(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as state:
        proc, port = start_server(state, "bow-pod64")
        try:
            cli = cli_against_floor(port, Path(state), repeat)
        finally:
            proc.terminate()
            proc.wait()
    print("\n(ms)                   floor   floor without teardown      CLI   CLI - floor   CLI - floor without"
          " teardown   goal (CLI - floor)")
    for kind, k in (("wall-clock", 0), ("CPU time", 1)):
        for name, figures in cli.items():
            floor, quick, ours, more, beside = (x * 1e3 for x in figures[k])
            goal = f"<= 15 ms {'met' if more <= 15 else 'NOT met'}" if k == 0 else ""
            print(f"vipu {name:<6} {kind:<10} {floor:7.1f} {quick:24.1f} {ours:8.1f} {more:13.1f} {beside:30.1f}"
                  f"   {goal}")
    print("floor: python -c 'import grpc' + the generated stubs + the same RPC; without teardown: the same, ended"
          f" with os._exit as the CLI ends; medians of {repeat} alternating runs each (CPU time: user + system, what"
          " a busy machine's waits leave out)")


def print_rates(jobs: int, rounds: int, threads: list[str]) -> None:
    handler = handler_cpu_us(jobs)
    commit_wall, commit_cpu = commit_us(jobs)
    rates = submit_against_bare(jobs, rounds, threads)
    print("\nrpc threads  clients   bare server: calls/s, CPU us/call   asyncio bare   SubmitJob: calls/s, CPU us/call"
          "   ratio   goal   ceiling   vipu-server GetVersion: calls/s, CPU us/call, ratio   handler in the server"
          "   70% allows")
    for (thread_count, clients), f in rates.items():
        # if vipu-server's gRPC cost no more than the bare server's, a call would cost the bare call's CPU plus the
        # handler's: on a machine whose cores the calls keep busy, the most the ratio could be
        ceiling = f["bare cpu"] / (f["bare cpu"] + handler)
        print(f"{thread_count:>11} {clients:8d} {f['bare rate']:14,.0f} {f['bare cpu']:12,.0f} {f['aio rate']:14,.0f}"
              f" {f['ours rate']:16,.0f} {f['ours cpu']:12,.0f} {f['ratio']:10.0%}   >= 70%"
              f" {'met' if f['ratio'] >= GOAL else 'NOT met'}   {ceiling:7.0%}   {f['empty rate']:27,.0f}"
              f" {f['empty cpu']:12,.0f} {f['empty ratio']:6.0%} {f['ours cpu'] - f['empty cpu']:23,.0f}"
              f" {f['bare cpu'] / GOAL - f['empty cpu']:12,.0f}")
    print("\nrpc threads  clients   durable floor: calls/s, CPU us/call, ratio   >= 70% possible   written by a thread"
          " of its own: calls/s, CPU us/call, ratio   70% leaves beyond the floor   SubmitJob: ratio to the floor,"
          " CPU us/call beyond it")
    for (thread_count, clients), f in rates.items():
        print(f"{thread_count:>11} {clients:8d} {f['floor rate']:16,.0f} {f['floor cpu']:12,.0f}"
              f" {f['floor ratio']:6.0%}   {'yes' if f['floor ratio'] >= GOAL else 'NO':>15}"
              f" {f['handed rate']:28,.0f} {f['handed cpu']:12,.0f} {f['handed ratio']:6.0%}"
              f" {f['bare cpu'] / GOAL - f['floor cpu']:29,.0f} {f['of floor']:34.0%}"
              f" {f['ours cpu'] - f['floor cpu']:21,.0f}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}; medians of {rounds} rounds of {jobs:,} calls each (the"
          f" ratio: of the rounds' ratios); the held jobs stay queued, up to {rounds * jobs:,}. The SubmitJob handler"
          f" alone, in this process (no gRPC), with the controller's log: {handler:,.0f} us of CPU a call; ceiling:"
          " the ratio if vipu-server's calls cost the bare server's CPU plus the handler's, bare / (bare + handler)."
          " Of the handler, the store's commit alone (a job's record in SQLite's WAL before the answer, as"
          f" durable): {commit_wall:,.0f} us wall-clock, {commit_cpu:,.0f} us CPU. vipu-server GetVersion: the same"
          " empty call to vipu-server, through its interceptors (request ids, metrics): what its gRPC costs without"
          " a handler. Handler in the server: vipu-server's CPU a SubmitJob call less a GetVersion call's, both"
          " measured here (bench_submit_parts.py says where it goes); 70% allows: the most it could be for the goal"
          " on cores the calls keep busy, the bare call's CPU / 0.7 less vipu-server's GetVersion call's (negative:"
          " not even an empty call fits). Durable floor: bench/bare_server.py --durable, the bare server also answering"
          " SubmitJob with the least a durable one must do (the request and its spec's JSON parsed, one job row of a"
          " held job's size committed in SQLite's WAL with the store's settings, the id answered), in the same rounds:"
          " if its ratio is under 70%, no durable SubmitJob in Python reaches the goal on this machine; 70% leaves"
          " beyond it: the CPU a call that the goal leaves for all a real handler does beyond the floor (validation,"
          " the caller, the queue, request ids, the log, metrics) on cores the calls keep busy, the bare call's CPU"
          " / 0.7 less the floor's; SubmitJob's CPU beyond it: what vipu-server's call costs more than the floor's."
          " Written by a thread of its own: the same floor with the insert done on a writing thread while the RPC's"
          " thread waits with a timeout, as vipu-server's store does so that a stalled disk cannot hang an RPC"
          " (bare_server.py --write-thread)")


if __name__ == "__main__":
    main()
