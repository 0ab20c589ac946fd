"""Crash safety of the controller: acknowledged submissions lost over kill -9 / restart cycles under load, the
time to serve again after a SIGKILL with 10,000 jobs in the store, and the same with 400,000 stored jobs of which
all but the live queue have ended and moved to the on-disk history (min_job_age), with the controller's resident
memory beside that of a store holding the live queue alone.

And the controller's resident memory at scale (issue 26): on the largest Pod (65,536 IPUs,
examples/pods/pod65536.yaml, --ray off) with `--scale-jobs` jobs of 1 to 64 IPUs queued through SubmitJobs, about
3,600 of them running and the rest pending: idle, once the queue is in, after a full listing of it as `vipu queue`
pages through it (the listing is kept for its pages) and one with every spec (`vipu queue --json`), and after a
Prometheus scrape; now (VmRSS) and at its peak (VmHWM).

Run: .venv/bin/python bench/bench_recovery.py [--cycles 5] [--jobs 10000] [--stored 400000] [--scale-jobs 50000]
     .venv/bin/python bench/bench_recovery.py --memory-only   (the memory at scale alone, a few minutes)
Goals (issues 7 and 23): 0 lost (and 0 duplicated) submissions; recovery under 5 s with 10,000 jobs stored and
with 400,000; resident memory bounded by the live queue, not the history. Wall-clock figures on this machine. The
memory at scale has no goal: it is there to be documented (docs/benchmarks.md, "The controller's memory at scale").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import re
import signal
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import grpc
from live_server import start_server

from vipu.control.startup import open_plane
from vipu.scheduler.job_record import HISTORY_KIND
from vipu.scheduler.job_states import JobState
from vipu.store import Store
from vipu.client.paging import every_page
from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc

SPEC = b'{"name": "load", "ipus": 1, "time_limit": "10m", "hold": true}'


def client(port: int, count: int, acked) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        for _ in range(count):
            request_id = uuid.uuid4().hex
            while True:
                try:
                    reply = stub.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id=request_id), timeout=5)
                    acked.append((request_id, tuple(reply.job_ids)))
                    break
                except grpc.RpcError:
                    time.sleep(0.05)


def wait_ready(port: int, timeout: float = 60) -> float:
    start = time.perf_counter()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = partition_pb2_grpc.PartitionServiceStub(channel)
        while time.perf_counter() - start < timeout:
            try:
                stub.GetVersion(p.GetVersionRequest(), timeout=1)
                return time.perf_counter() - start
            except grpc.RpcError:
                time.sleep(0.01)
    raise TimeoutError("the controller did not come back")


def kill_cycles(cycles: int, per_cycle: int) -> tuple[int, int, int]:
    with tempfile.TemporaryDirectory() as state, multiprocessing.Manager() as manager:
        acked = manager.list()
        proc, port = start_server(state, "bow-pod64", "--port", "0")
        clients = [multiprocessing.Process(target=client, args=(port, per_cycle * cycles // 2, acked)) for _ in range(2)]
        for c in clients:
            c.start()
        for cycle in range(cycles):
            while len(acked) < per_cycle * (cycle + 0.5):
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc, _ = start_server(state, "bow-pod64", "--port", str(port))
        for c in clients:
            c.join()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            jobs = every_page(lambda r: job_pb2_grpc.JobServiceStub(channel).ListJobs(r, timeout=60), j.ListJobsRequest()).jobs
        proc.terminate()
        proc.wait()
        ids = [i for _, job_ids in acked for i in job_ids]
        stored = {x.id for x in jobs}
        return len(ids), len(set(ids) - stored), len(ids) - len(set(ids)) + len(stored - set(ids))


def recovery_time(jobs: int, ended: int = 0) -> tuple[float, int, tuple[float, float, float]]:
    """Seconds to serve again after kill -9 with `jobs` held jobs queued and `ended` more in the job history, the
    restarted controller's resident memory (kB), and the seconds of that start's checks of the history: its pages,
    its rows (json_valid, every start) and the decoding of every row (a start with --quarantine-bad-records)."""
    with tempfile.TemporaryDirectory() as state:
        plane = open_plane("bow-pod256", Path(state), "127.0.0.1", 0)  # fill the store offline, same format
        if ended:  # jobs ended long ago, as purge.py leaves them: in the history, ids 1 to `ended`
            (done,) = plane.scheduler.submit({"name": "done", "ipus": 4, "time_limit": "1h", "hold": True}, 0.0)
            plane.scheduler.table.forget(done)
            plane.store.commit([], [("job", str(done.id))])
            done = done.moved(JobState.CANCELLED, 0.0, end_time=0.0)
            for first in range(1, ended + 1, 10_000):
                plane.store.commit([(HISTORY_KIND, str(i), done.updated({"id": i}))
                                    for i in range(first, min(first + 10_000, ended + 1))], [])
            plane.scheduler.table.next_id = ended + 1
        for i in range(jobs):
            plane.scheduler.submit({"name": f"j{i}", "ipus": 4, "time_limit": "1h", "hold": True}, plane.now())
        plane.store.close()
        proc, port = start_server(state, "bow-pod256")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        started = time.perf_counter()
        proc, port = start_server(state, "bow-pod256", "--port", str(port))
        ready = time.perf_counter() - started + wait_ready(port)
        rss = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{proc.pid}/status").read_text()).group(1))
        proc.terminate()
        proc.wait()
        store = Store(Path(state) / "vipu.sqlite3")
        checks = []
        for check in (store.damaged_tables, lambda: store.bad_history_rows(decode=False),
                      lambda: store.bad_history_rows(decode=True)):
            started = time.perf_counter()
            assert check() == []
            checks.append(time.perf_counter() - started)
        store.close()
        return ready, rss, tuple(checks)


def memory_kb(pid: int) -> tuple[int, int]:
    """A process's resident memory now and at its peak (VmRSS, VmHWM), in kB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return tuple(int(re.search(rf"{key}:\s+(\d+)", status).group(1)) for key in ("VmRSS", "VmHWM"))


def scale_memory(jobs: int, pod: str) -> list[tuple[str, int, int]]:
    """The controller's memory (VmRSS, VmHWM in kB) on `pod` idle, with `jobs` queued (sizes 1 to 64 IPUs, an hour
    each, 100 per SubmitJobs call) once its cycles have placed what fits, and after one full listing of the queue."""
    sizes = (1, 2, 4, 8, 16, 32, 64)
    with tempfile.TemporaryDirectory() as state:
        proc, port = start_server(state, pod)
        try:
            wait_ready(port)
            seen = [("idle", *memory_kb(proc.pid))]
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = job_pb2_grpc.JobServiceStub(channel)
                for first in range(0, jobs, 100):
                    batch = [j.SubmitJobRequest(spec=json.dumps({"name": f"load{i}", "ipus": sizes[i % len(sizes)],
                                                                 "time_limit": "1h"}).encode(),
                                                request_id=uuid.uuid4().hex)
                             for i in range(first, min(first + 100, jobs))]
                    stub.SubmitJobs(j.SubmitJobsRequest(jobs=batch), timeout=120)
                info, last = None, None
                while info is None or (info.running_jobs, info.pending_jobs) != last:  # until a cycle changes nothing
                    last = None if info is None else (info.running_jobs, info.pending_jobs)
                    time.sleep(2)
                    info = stub.ClusterInfo(j.ClusterInfoRequest(), timeout=60)
                seen.append((f"{jobs:,} jobs queued ({info.running_jobs:,} running, {info.pending_jobs:,} pending)",
                             *memory_kb(proc.pid)))
                for brief, how in ((True, "as `vipu queue`"), (False, "with specs, as `vipu queue --json`")):
                    listed = every_page(lambda r: stub.ListJobs(r, timeout=120), j.ListJobsRequest(brief=brief)).jobs
                    seen.append((f"after a listing of the queue ({len(listed):,} jobs, {how})", *memory_kb(proc.pid)))
                metrics = re.search(r"metrics on (\S+)", proc.banner).group(1)
                scraped = len(urllib.request.urlopen(metrics, timeout=120).read())
                seen.append((f"after a /metrics scrape ({scraped / 1e6:.1f} MB)", *memory_kb(proc.pid)))
            return seen
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--cycles", type=int, default=5, help="kill -9 / restart cycles under submitting clients")
    parser.add_argument("--per-cycle", type=int, default=200, help="submissions each client makes per cycle")
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs in the store for the time to serve again")
    parser.add_argument("--stored", type=int, default=400_000,
                        help="stored jobs, all but the live queue ended, for the bounded-history restart")
    parser.add_argument("--scale-jobs", type=int, default=50_000, help="jobs queued for the memory at scale")
    parser.add_argument("--scale-pod", default=str(Path(__file__).resolve().parents[1] / "examples/pods/pod65536.yaml"),
                        help="the Pod of the memory at scale")
    parser.add_argument("--memory-only", action="store_true", help="measure only the memory at scale")
    args = parser.parse_args()
    print(f"# bench_recovery: {time.strftime('%Y-%m-%d %H:%M %Z')} on {platform.node()} (Python"
          f" {platform.python_version()}), load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.memory_only:
        print_memory(args.scale_jobs, args.scale_pod)
        return
    acked, lost, duplicated = kill_cycles(args.cycles, args.per_cycle)
    print(f"kill -9 under load, {args.cycles} cycles, 2 clients: {acked} acknowledged, {lost} lost, {duplicated}"
          " duplicated (goal 0 and 0)")
    ready, live_rss, _ = recovery_time(args.jobs)
    print(f"recovery after kill -9 with {args.jobs:,} jobs in the store: serving again in {ready:.2f} s (goal < 5 s),"
          f" resident {live_rss / 1024:.0f} MB")
    ready, rss, (pages, rows, decoding) = recovery_time(args.jobs, args.stored - args.jobs)
    print(f"recovery after kill -9 with {args.stored:,} jobs stored, {args.stored - args.jobs:,} of them ended and in"
          f" the history: serving again in {ready:.2f} s (goal < 5 s), resident {rss / 1024:.0f} MB"
          f" ({rss / live_rss:.2f}x the live queue's alone); of which the start's checks of the history: its pages"
          f" {pages:.2f} s, its rows {rows:.2f} s (a start with --quarantine-bad-records decodes every row too:"
          f" {decoding:.2f} s more)")
    print_memory(args.scale_jobs, args.scale_pod)


def print_memory(jobs: int, pod: str) -> None:
    print(f"controller memory on {Path(pod).stem} (--ray off), resident now / at peak:")
    for what, rss, peak in scale_memory(jobs, pod):
        print(f"  {what}: {rss / 1024:.0f} MB / {peak / 1024:.0f} MB")
    print(f"  (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end)")


if __name__ == "__main__":
    sys.exit(main())
