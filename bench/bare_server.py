"""A gRPC server with nothing of vipu-sim in it: the same grpcio, thread pool size and service as vipu-server, and
a GetVersion that answers an empty message. Its rate is the ceiling of any Python gRPC server on this machine, so
bench_vs_slurm and bench_cli print it beside the real one: what is left between them is ours to cut, the rest is the
transport. With --aio, gRPC's asyncio server instead (grpc.aio), to tell whether it would raise that ceiling.

With --durable DIR, the same server also answers SubmitJob with the least any durable SubmitJob must do: the
request parsed (gRPC's deserializer, then the spec's JSON), one job row of a held job's size (a record like the
store's, about 820 bytes of JSON) inserted and committed in SQLite's WAL with the store's settings
(journal_mode=WAL, synchronous=NORMAL: in the WAL, so an answered job survives SIGKILL), and the job id answered.
No validation, queue, log, request ids or metrics: bench_cli prints its rate as the floor under vipu-server's. With
--write-thread too, the insert is done by a thread of its own while the RPC's thread waits for it with a timeout, as
vipu-server's store writes (store_thread.py: a write stuck in a stalled disk must not hang the RPC past its
deadline): the floor of a durable SubmitJob that keeps that guarantee, one hand-off more.

Run: .venv/bin/python bench/bare_server.py [--aio | --durable DIR [--write-thread]]   (prints `listening on
127.0.0.1:PORT`, serves until killed)
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

from vipu.server.arguments import DEFAULT_RPC_THREADS
from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc


class EmptyPartitionService(partition_pb2_grpc.PartitionServiceServicer):
    def GetVersion(self, request, context):
        return p.VersionInfo()


class AsyncEmptyPartitionService(partition_pb2_grpc.PartitionServiceServicer):
    async def GetVersion(self, request, context):
        return p.VersionInfo()


# what a held job's record holds beside its id, spec, request id and times, as vipu-server stores it (its JSON is
# about 820 bytes in all, as the store's record of the same held job)
RECORD = {"account": None, "partition": "slurm_1", "array_job_id": None, "array_task_id": None, "state": "PENDING",
          "held": True, "admin_hold": False, "begin_time": None, "reason": None, "estimated_start": None,
          "start_time": None, "end_time": None, "exit_code": None, "exit_signal": 0, "first_ipu": None,
          "requeue_count": 0, "recovery": None, "preemption": None, "ended_by": None, "submitted_spec": None,
          "fixed_priority": None, "priority": None}
SPEC_DEFAULTS = {"time_limit": 600.0, "qos": "normal", "nice": 0, "account": None, "dependency": None, "array": None,
                 "begin": None, "requeue": True, "output": None, "error": None, "submit_dir": None,
                 "allocation": None, "workload": {"kind": "hold"}}


class DurableJobService(job_pb2_grpc.JobServiceServicer):
    """SubmitJob's floor: parse, one durable insert, answer (module docstring)."""

    def __init__(self, folder: Path, write_thread: bool):
        # one thread that writes, as the store's; else the RPC's own thread writes
        self._writer = futures.ThreadPoolExecutor(max_workers=1) if write_thread else None
        folder.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(folder / "jobs.sqlite3", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # SQLite's automatic checkpoint stays on: a commit now and then copies the WAL into the database, CPU the
        # store spends too, on a thread of its own (store.py: Checkpoints)
        self._db.execute("CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, name TEXT NOT NULL,"
                         " doc TEXT NOT NULL, PRIMARY KEY (kind, name)) WITHOUT ROWID")
        self._lock = threading.Lock()  # one connection, one writer at a time, as the store's thread
        self._next = 1

    def SubmitJob(self, request, context):
        spec = json.loads(request.spec)
        with self._lock:
            job_id, self._next = self._next, self._next + 1
            now = time.time()
            doc = json.dumps({"id": job_id, "name": spec.get("name"), "user": spec.get("user"),
                              "spec": {**SPEC_DEFAULTS, **spec}, "submit_time": now, **RECORD,
                              "request_id": request.request_id, "history": [["PENDING", now]]}, separators=(",", ":"))
            if self._writer is None:
                self._insert(job_id, doc)
            else:
                written = self._writer.submit(self._insert, job_id, doc)
        if self._writer is not None:
            written.result(timeout=10)  # the store's write timeout
        return j.SubmitJobResponse(job_ids=[job_id])

    def _insert(self, job_id: int, doc: str) -> None:
        # one statement outside BEGIN is a transaction of its own, committed when it returns (as the store's writes)
        self._db.execute("INSERT INTO records (kind, name, doc) VALUES ('job', ?, ?)", (str(job_id), doc))


def main(durable: Path | None, write_thread: bool) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=DEFAULT_RPC_THREADS))
    partition_pb2_grpc.add_PartitionServiceServicer_to_server(EmptyPartitionService(), server)
    if durable is not None:
        job_pb2_grpc.add_JobServiceServicer_to_server(DurableJobService(durable, write_thread), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()


async def main_aio() -> None:
    server = grpc.aio.server()
    partition_pb2_grpc.add_PartitionServiceServicer_to_server(AsyncEmptyPartitionService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    if "--aio" in sys.argv[1:]:
        sys.exit(asyncio.run(main_aio()))
    sys.exit(main(Path(sys.argv[sys.argv.index("--durable") + 1]) if "--durable" in sys.argv[1:] else None,
                  "--write-thread" in sys.argv[1:]))
