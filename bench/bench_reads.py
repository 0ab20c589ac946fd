"""Do reads block writes? Submissions per second and their p99 latency with 8 submitting clients, then with 7
submitting clients and 1 client listing the queue as fast as it can (what `watch vipu queue` does all day).

Run: .venv/bin/python bench/bench_reads.py [--stored 20000] [--seconds 10]
Each run starts a fresh controller (Pod256, --ray off) on a copy of one state folder holding `--stored` held jobs,
so both runs begin from the same queue. Each client is a process; submissions are held jobs sent as `vipu submit`
sends them (JSON, a fresh request id). The lister pages through the queue as `vipu queue` does.
Goal (issue 20): the second run keeps at least 80% of the first run's submissions per second, with p99 under 20 ms.
All figures are wall-clock on this machine, measured in one run of this script.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from live_server import start_server

from vipu.v1 import job_pb2 as j, job_pb2_grpc

SPEC = json.dumps({"name": "bench", "ipus": 4, "time_limit": "10m", "hold": True, "user": "bench"}).encode()


def fill(port: int, jobs: int) -> None:
    """`jobs` held jobs, 100 a call."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        for first in range(0, jobs, 100):
            batch = [j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex) for _ in range(min(100, jobs - first))]
            stub.SubmitJobs(j.SubmitJobsRequest(jobs=batch), timeout=60)


def submitter(port: int, seconds: float, barrier, out) -> None:
    latencies = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        stub.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=10)  # connected
        barrier.wait()
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            stub.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=30)
            latencies.append(time.perf_counter() - now)
    out.put(("submit", latencies))


def lister(port: int, seconds: float, barrier, out, brief: bool = True) -> None:
    from vipu.client.paging import every_page  # how `vipu queue` reads the whole queue

    times, rows = [], 0
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        barrier.wait()
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            rows = len(every_page(lambda request: stub.ListJobs(request, timeout=60), j.ListJobsRequest(brief=brief)).jobs)
            times.append(time.perf_counter() - now)
    out.put(("list", (times, rows)))


def run(state: Path, seconds: float, submitters: int, listers: int, brief: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "state"
        shutil.copytree(state, copy)
        proc, port = start_server(str(copy), "bow-pod256")
        try:
            out = multiprocessing.Queue()
            barrier = multiprocessing.Barrier(submitters + listers + 1)
            procs = [multiprocessing.Process(target=submitter, args=(port, seconds, barrier, out))
                     for _ in range(submitters)]
            procs += [multiprocessing.Process(target=lister, args=(port, seconds, barrier, out, brief))
                      for _ in range(listers)]
            for p in procs:
                p.start()
            barrier.wait()
            results = [out.get(timeout=seconds + 120) for _ in procs]
            for p in procs:
                p.join()
        finally:
            proc.terminate()
            proc.wait()
    latencies = sorted(x for kind, xs in results if kind == "submit" for x in xs)
    lists = [x for kind, x in results if kind == "list"]
    return {
        "rate": len(latencies) / seconds,
        "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1e3,
        "max_ms": latencies[-1] * 1e3 if latencies else 0.0,
        "listings": sum(len(times) for times, _ in lists),
        "listing_s": (sum(sum(times) for times, _ in lists) / max(1, sum(len(times) for times, _ in lists))),
        "rows": max((rows for _, rows in lists), default=0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=20_000, help="held jobs in the state the controller starts on")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each run submits")
    args = parser.parse_args()
    print(f"# bench_reads: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()} ({platform.machine()}, Python"
          f" {platform.python_version()}); Pod256, {args.stored:,} stored held jobs, {args.seconds:g} s a run")
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        proc, port = start_server(str(state), "bow-pod256")
        try:
            fill(port, args.stored)
        finally:
            proc.terminate()
            proc.wait()
        alone = run(state, args.seconds, 8, 0)
        mixed = run(state, args.seconds, 7, 1)
    print(f"8 submitting clients:             {alone['rate']:,.0f} submissions/s, p99 {alone['p99_ms']:.1f} ms,"
          f" max {alone['max_ms']:.0f} ms")
    print(f"7 submitting clients + 1 listing: {mixed['rate']:,.0f} submissions/s, p99 {mixed['p99_ms']:.1f} ms,"
          f" max {mixed['max_ms']:.0f} ms; {mixed['listings']} listings of up to {mixed['rows']:,} jobs,"
          f" {mixed['listing_s']:.2f} s each")
    ratio = mixed["rate"] / alone["rate"] if alone["rate"] else 0.0
    print(f"ratio {ratio:.0%} (goal >= 80%), p99 with the lister {mixed['p99_ms']:.1f} ms (goal < 20 ms)")


if __name__ == "__main__":
    main()
