"""Job submissions per second over gRPC, with 1 and 8 concurrent clients, against a live vipu-server (Pod256).

Run: .venv/bin/python bench/bench_submit.py [--jobs N] [--rpc-threads 3,8]
Each submission is a held job (so the queue grows and nothing runs), sent as JSON with a fresh request id, as
`vipu submit` sends it; the server validates it, commits it to SQLite (WAL) and only then answers.
Goal (issue 3): >= 2,000 submissions per second. Slurm's published sustained figure is 500/s.
First it times the server's SubmitJob handler alone, in this process (no gRPC), so the rows show what the transport
adds. All times are wall-clock on this machine. Rows for the server's default number of gRPC threads (3) and for 8, which
shows why the default is small: under one GIL, more threads mostly add contention.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from live_server import start_server, timed_clients

from vipu.server.job_service import JobService
from vipu.control.startup import open_plane
from vipu.v1 import job_pb2 as j, job_pb2_grpc

SPEC = json.dumps({"name": "bench", "ipus": 4, "time_limit": "10m", "hold": True, "user": "bench"}).encode()


def client(port: int, count: int, barrier) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        stub.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=10)  # connect first
        barrier.wait()
        for _ in range(count):
            stub.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex), timeout=10)


def submit_rate(port: int, jobs: int, clients: int) -> float:
    """Each client is its own process (as separate users' sbatch calls are), all sharing this machine's 2 cores
    with the server."""
    per_client = jobs // clients
    return per_client * clients / timed_clients(client, [(port, per_client)] * clients)


class LocalCall:
    """What the server's handler reads of a gRPC call (no metadata, a generous deadline): so the handler can be timed
    without the transport."""

    def invocation_metadata(self):
        return ()

    def time_remaining(self) -> float:
        return 10.0


def handler_us(jobs: int, pod: str = "bow-pod256", clock=time.perf_counter, between=None) -> float:
    """Microseconds per submission of the server's own SubmitJob in this process, no gRPC: parse and validate the
    spec, queue the job, commit it to SQLite (WAL) and build the answer. What the transport adds is the rest.
    `clock`: time.process_time for the process's CPU time (all its threads) instead of wall-clock. `between`:
    called before each timed call (its time counted too)."""
    with tempfile.TemporaryDirectory() as state_dir:
        plane = open_plane(pod, Path(state_dir), "127.0.0.1", 0)
        try:
            service, call = JobService(plane), LocalCall()
            requests = [j.SubmitJobRequest(spec=SPEC, request_id=uuid.uuid4().hex) for _ in range(jobs + 1)]
            service.SubmitJob(requests.pop(), call)
            start = clock()
            for request in requests:
                if between is not None:
                    between()
                service.SubmitJob(request, call)
            return (clock() - start) / jobs * 1e6
        finally:
            plane.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--rpc-threads", default="3,8", help="server --rpc-threads values to measure")
    args = parser.parse_args()
    print(f"# bench_submit: {time.strftime('%Y-%m-%d')} on {platform.node()} ({platform.machine()}, Python"
          f" {platform.python_version()}); each client is a process")
    print(f"the SubmitJob handler alone, in-process (no gRPC), one at a time: {handler_us(args.jobs):,.0f} us per"
          " submission")
    for threads in args.rpc_threads.split(","):
        for clients in (1, 8):
            with tempfile.TemporaryDirectory() as state_dir:
                proc, port = start_server(state_dir, "bow-pod256", "--rpc-threads", threads)
                try:
                    rate = submit_rate(port, args.jobs, clients)
                finally:
                    proc.terminate()
                    proc.wait()
            print(f"submissions over gRPC, {clients} client(s), server --rpc-threads {threads}: {rate:,.0f} per second"
                  " (goal >= 2,000; Slurm: 500)")


if __name__ == "__main__":
    main()
