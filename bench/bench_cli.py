"""The CLI and one job per SubmitJob call against Python's own floor, measured in one run (issue 26's goals).

Run: .venv/bin/python bench/bench_cli.py [--repeat 21] [--jobs 1000] [--rounds 5] [--only cli|rates] [--rpc-threads 2,3]

1. `vipu queue` and `vipu submit SPEC` (a held job) against a fresh `vipu-server --ray off`, each next to its floor:
   this Python starting, importing grpc and the generated stubs, and making the same RPC to the same server
   (ListJobs; SubmitJob with the same spec bytes). The runs alternate, floor and CLI, --repeat times each; the
   figures are medians, and the difference is the median of the pairs' differences. Goal: within 15 ms. The same
   runs' CPU time (user + system) is printed too: other work on a busy machine stretches wall-clock far more.
2. One held job per SubmitJob call, from 1 and 4 client processes, against bench/bare_server.py (empty GetVersion
   calls to a gRPC server with nothing of vipu-sim in it: the most a Python gRPC server answers here). Each round
   measures both, one after the other; medians of the rounds, and of their ratios. Goal: at least 70%.
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

import grpc
from live_server import start_bare_server, start_server, timed_clients

from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc

BIN = Path(sys.executable).parent
DEFAULT = "default"  # the server's own --rpc-threads
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


def seconds(command: list[str], env: dict) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run of `command`."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cli_against_floor(port: int, folder: Path, repeat: int) -> dict[str, list[tuple[float, float, float]]]:
    """Per command, wall-clock then CPU: (floor, CLI, CLI - floor) in seconds."""
    spec = folder / "held.json"
    spec.write_bytes(SPEC)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: bytecode cached
    env.update(VIPU_CLI_API_HOST="127.0.0.1", VIPU_CLI_API_PORT=str(port), VIPU_CLI_API_USER_ID="bench")
    address = f"127.0.0.1:{port}"
    commands = {
        "queue": ([sys.executable, "-c", FLOOR["queue"], address], [str(BIN / "vipu"), "queue"]),
        "submit": ([sys.executable, "-c", FLOOR["submit"], address, str(spec)],
                   [str(BIN / "vipu"), "submit", str(spec)]),
    }
    result = {}
    for name, (floor, cli) in commands.items():
        seconds(floor, env), seconds(cli, env)  # warm-up: bytecode written, files in the page cache
        pairs = [(seconds(floor, env), seconds(cli, env)) for _ in range(repeat)]
        result[name] = [(statistics.median(f[k] for f, _ in pairs), statistics.median(c[k] for _, c in pairs),
                         statistics.median(c[k] - f[k] for f, c in pairs)) for k in (0, 1)]
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


def rate(target, port: int, jobs: int, clients: int) -> float:
    per_client = jobs // clients
    return per_client * clients / timed_clients(target, [(port, per_client)] * clients)


def submit_against_bare(jobs: int, rounds: int, threads: list[str]) -> dict[tuple, tuple[float, float, float]]:
    """Per (server --rpc-threads, client count): the bare server's empty calls/s, vipu-server's SubmitJob calls/s
    and their ratio, medians of `rounds` rounds, each measuring both, one after the other (so a change in the
    machine's speed hits both)."""
    result = {}
    bare_proc, bare_port = start_bare_server()
    try:
        for thread_count, clients in [(t, c) for t in threads for c in (1, 4)]:
            flags = ["--rpc-threads", thread_count] if thread_count != DEFAULT else []
            with tempfile.TemporaryDirectory() as state:
                proc, port = start_server(state, "bow-pod64", *flags)
                try:
                    pairs = [(rate(empty_caller, bare_port, jobs, clients), rate(submitter, port, jobs, clients))
                             for _ in range(rounds)]
                finally:
                    proc.terminate()
                    proc.wait()
            result[thread_count, clients] = (statistics.median(b for b, _ in pairs), statistics.median(o for _, o in pairs),
                               statistics.median(o / b for b, o in pairs))
    finally:
        bare_proc.terminate()
        bare_proc.wait()
    return result


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
          f" {platform.python_version()}; knobs {vars(args)}")
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
    print("\ncommand, wall-clock     floor (ms)   CLI (ms)   CLI - floor (ms)   goal")
    for name, ((floor, ours, more), _) in cli.items():
        print(f"vipu {name:<18} {floor * 1e3:10.1f} {ours * 1e3:10.1f} {more * 1e3:18.1f}   <= 15 ms"
              f" {'met' if more <= 0.015 else 'NOT met'}")
    for name, (_, (floor, ours, more)) in cli.items():
        print(f"vipu {name:<11} CPU time {floor * 1e3:10.1f} {ours * 1e3:10.1f} {more * 1e3:18.1f}")
    print("floor: python -c 'import grpc' + the generated stubs + the same RPC; medians of"
          f" {repeat} alternating runs each (CPU time: user + system, what a busy machine's waits leave out)")


def print_rates(jobs: int, rounds: int, threads: list[str]) -> None:
    rates = submit_against_bare(jobs, rounds, threads)
    print("\nrpc threads  clients   bare server, empty calls/s   SubmitJob, one held job per call/s   ratio   goal")
    for (thread_count, clients), (bare, ours, ratio) in rates.items():
        print(f"{thread_count:>11} {clients:8d} {bare:28,.0f} {ours:36,.0f} {ratio:7.0%}   >= 70%"
              f" {'met' if ratio >= 0.7 else 'NOT met'}")
    print(f"medians of {rounds} rounds of {jobs:,} calls each (the ratio: of the rounds' ratios); the held jobs stay"
          f" queued, up to {rounds * jobs:,}")


if __name__ == "__main__":
    main()
