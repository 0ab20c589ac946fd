"""A store that cannot write: the RPC that writes fails UNAVAILABLE with a message, health says NOT_SERVING,
reads keep answering, and once writing works again the kept change is stored and health says SERVING
(issue 23, finding 9)."""

from __future__ import annotations

import sqlite3
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc

SPEC = b"{ipus: 1, hold: true, name: kept}"


def health(channel) -> int:
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10).status


def test_a_locked_database_fails_writes_not_reads_and_health_follows(server):
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id="before"), timeout=10)
        holder = sqlite3.connect(server.state_dir / "vipu.sqlite3", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock (a backup tool, say)
        try:
            with pytest.raises(grpc.RpcError) as refused:
                jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id="during"), timeout=60)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "could not be written (database is locked); the change is kept" in refused.value.details()
            assert health(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
            listed = jobs.ListJobs(j.ListJobsRequest(), timeout=10)  # reads keep answering
            assert [x.name for x in listed.jobs][:1] == ["kept"]
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        deadline = time.monotonic() + 30
        while health(channel) != health_pb2.HealthCheckResponse.SERVING and time.monotonic() < deadline:
            time.sleep(0.1)
        assert health(channel) == health_pb2.HealthCheckResponse.SERVING
        again = jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC, request_id="during"), timeout=10)
        assert again.duplicate  # the refused submit's job was kept and stored: the retry finds it
    with sqlite3.connect(server.state_dir / "vipu.sqlite3") as db:
        stored = db.execute("SELECT count(*) FROM records WHERE kind = 'job'").fetchone()[0]
    assert stored == 2
