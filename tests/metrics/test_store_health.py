"""The state store's health as an operator sees it: vipu_store_writable, vipu_store_write_failures_total and
/healthz follow the store as gRPC health does, and /healthz answers without a key, for probes."""

from __future__ import annotations

import sqlite3
import time
import urllib.error
import urllib.request

import grpc
import pytest

from tests.metrics.test_metrics import scrape
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc


def healthz(server) -> tuple[int, str]:
    url = server.metrics_url.removesuffix("/metrics") + "/healthz"
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_store_gauges_and_healthz_follow_a_store_that_cannot_write(server):
    assert healthz(server) == (200, "SERVING\n")
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        holder = sqlite3.connect(server.state_dir / "vipu.sqlite3", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            with pytest.raises(grpc.RpcError) as refused:
                jobs.SubmitJob(j.SubmitJobRequest(spec=b"{ipus: 1, hold: true}", request_id="r1"), timeout=60)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            text = scrape(server.metrics_url)
            assert "vipu_store_writable 0.0" in text
            assert "vipu_store_write_failures_total 0.0" not in text  # one or more: the retries count too
            status, body = healthz(server)
            assert status == 503 and body.startswith("NOT_SERVING: the state store cannot write")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    deadline = time.monotonic() + 30
    while healthz(server)[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert healthz(server) == (200, "SERVING\n")
    assert "vipu_store_writable 1.0" in scrape(server.metrics_url)


def test_healthz_needs_no_key_where_metrics_do(server_factory):
    server = server_factory(extra=["--secure"])
    assert healthz(server) == (200, "SERVING\n")
    with pytest.raises(urllib.error.HTTPError) as denied:
        scrape(server.metrics_url)
    assert denied.value.code == 401
