"""A bounded loopback load: thousands of short jobs from concurrent client processes; every job is accounted for
(each submission acknowledged once, every job COMPLETED, every partition given back) and the controller's memory
stays bounded."""

from __future__ import annotations

import json
import multiprocessing
import time
import uuid
from pathlib import Path

import grpc

from vipu.client.paging import every_page
from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc

SPEC = json.dumps({"name": "short", "ipus": 1, "time_limit": "1m", "workload": {"kind": "sleep", "duration": "0.05s"}})


# Fresh client processes, not forks: a fork of this test process, which has gRPC channels and their threads,
# can hang in the child (gRPC is not fork-safe), and did.
SPAWN = multiprocessing.get_context("spawn")


def client(address: str, count: int, acked) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        for _ in range(count):
            reply = stub.SubmitJob(j.SubmitJobRequest(spec=SPEC.encode(), request_id=uuid.uuid4().hex), timeout=30)
            acked.extend(list(reply.job_ids))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def run_wave(server, clients: int, per_client: int) -> list[int]:
    with SPAWN.Manager() as manager:
        acked = manager.list()
        procs = [SPAWN.Process(target=client, args=(server.address, per_client, acked)) for _ in range(clients)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=300)
            assert proc.exitcode == 0
        return list(acked)


def wait_drained(stub, deadline_s: float = 300) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if not stub.ListJobs(j.ListJobsRequest(), timeout=30).jobs:
            return
        time.sleep(0.5)
    raise AssertionError("jobs still queued or running")


def test_thousands_of_jobs_all_accounted_for_with_bounded_memory(server):
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        first = run_wave(server, clients=4, per_client=250)
        wait_drained(jobs)
        after_first = rss_mb(server.proc.pid)
        second = run_wave(server, clients=4, per_client=250)
        wait_drained(jobs)
        after_second = rss_mb(server.proc.pid)
        ids = first + second
        assert len(ids) == len(set(ids)) == 2000
        history = every_page(lambda r: jobs.History(r, timeout=60), j.HistoryRequest()).jobs
        assert {x.id for x in history} == set(ids)
        assert {x.state for x in history} == {"COMPLETED"}
        partitions = partition_pb2_grpc.PartitionServiceStub(channel).ListPartitions(p.ListPartitionsRequest(),
                                                                                       timeout=30)
        assert list(partitions.partitions) == []
    # the second 1,000 jobs add only their records (a few KB each), not a leak per request
    assert after_second - after_first < 40, (after_first, after_second)
