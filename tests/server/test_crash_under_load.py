"""A SIGKILL of the controller while clients are submitting loses no acknowledged job and duplicates none:
every submit carries a client request id, and a client retries with the same id until it gets an answer. Half the
clients submit one job per call (SubmitJob), half ten per call (SubmitJobs, retried whole)."""

from __future__ import annotations

import json
import multiprocessing
import signal
import time
import uuid

import grpc

from vipu.client.paging import every_page
from vipu.v1 import job_pb2 as j, job_pb2_grpc

SPEC = b'{"name": "load", "ipus": 1, "time_limit": "10m", "hold": true}'
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


# Fresh client processes, not forks: a fork of this test process, which has gRPC channels and their threads,
# can hang in the child (gRPC is not fork-safe), and did.
SPAWN = multiprocessing.get_context("spawn")


def client(address: str, count: int, acked, seed: int, per_call: int) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        for i in range(0, count, per_call):
            requests = [j.SubmitJobRequest(spec=SPEC, request_id=f"{seed}-{k}-{uuid.uuid4().hex[:6]}")
                        for k in range(i, i + per_call)]
            give_up = time.monotonic() + 60
            while True:
                try:
                    if per_call == 1:
                        replies = [stub.SubmitJob(requests[0], timeout=5)]
                    else:
                        replies = stub.SubmitJobs(j.SubmitJobsRequest(jobs=requests), timeout=5).jobs
                    acked.extend([(r.request_id, tuple(reply.job_ids)) for r, reply in zip(requests, replies)])
                    break
                except grpc.RpcError as e:
                    assert e.code() in RETRYABLE and time.monotonic() < give_up, e
                    time.sleep(0.05)


def test_sigkill_under_load_loses_and_duplicates_nothing(server):
    clients, per_client = 4, 150
    with SPAWN.Manager() as manager:
        acked = manager.list()
        procs = [SPAWN.Process(target=client, args=(server.address, per_client, acked, c, 1 + 9 * (c % 2)))
                 for c in range(clients)]
        for proc in procs:
            proc.start()
        deadline = time.monotonic() + 60
        while len(acked) < 100:  # kill while submissions are in flight
            assert time.monotonic() < deadline and all(p.exitcode is None for p in procs), "the clients stopped"
            time.sleep(0.01)
        server.kill(signal.SIGKILL)
        killed_after = len(acked)
        server.start()  # same state folder, same port
        for proc in procs:
            proc.join(timeout=120)
            assert proc.exitcode == 0
        answers = list(acked)
    assert killed_after < clients * per_client  # the kill really landed mid-load
    assert len(answers) == clients * per_client
    with grpc.insecure_channel(server.address) as channel:
        jobs = every_page(lambda r: job_pb2_grpc.JobServiceStub(channel).ListJobs(r, timeout=30), j.ListJobsRequest()).jobs
    stored = {x.id: x for x in jobs}
    ids = [job_id for _, job_ids in answers for job_id in job_ids]
    assert len(ids) == len(set(ids)) == clients * per_client  # one job per request, none handed out twice
    assert set(ids) == set(stored)  # every acknowledged job survived, and nothing else was queued
    assert {json.loads(x.detail_json)["request_id"] for x in jobs} == {r for r, _ in answers}
