"""Per-user request rate limits (Slurm's rl_*): a token bucket per user; one user's flood does not slow another."""

from __future__ import annotations

import grpc
import pytest

from vipu.server.rate_limit import Buckets
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc


def test_a_bucket_allows_its_burst_then_its_rate():
    clock = [0.0]
    buckets = Buckets(rate=2.0, burst=3, now=lambda: clock[0])
    assert [buckets.take("bob") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("bob") == pytest.approx(0.5)  # empty: the next token in half a second
    assert buckets.take("carol") == 0.0  # another user's bucket is full
    clock[0] += 0.5
    assert buckets.take("bob") == 0.0
    clock[0] += 100
    assert [buckets.take("bob") for _ in range(4)][-1] > 0  # refilled to the burst, not beyond


def test_a_user_past_the_limit_is_refused_and_others_are_not(server_factory):
    server = server_factory(extra=["--rate-limit", "0.01", "--rate-limit-burst", "5"])
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        as_bob, as_carol = (("x-vipu-user", "bob"),), (("x-vipu-user", "carol"),)
        for _ in range(5):
            jobs.ListJobs(j.ListJobsRequest(), timeout=10, metadata=as_bob)
        with pytest.raises(grpc.RpcError) as refused:
            jobs.ListJobs(j.ListJobsRequest(), timeout=10, metadata=as_bob)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.details().startswith("user bob sends requests faster than this controller allows"
                                                  " (0.01 a second, in bursts of up to 5); retry in ")
        jobs.ListJobs(j.ListJobsRequest(), timeout=10, metadata=as_carol)  # carol's bucket is her own


def test_the_table_of_buckets_stays_bounded_and_forgets_only_refilled_ones():
    """Regression: 8,000 claimed names made 8,000 buckets that were never dropped."""
    from vipu.server import rate_limit

    clock = [0.0]
    buckets = Buckets(rate=1.0, burst=3, now=lambda: clock[0])
    for k in range(rate_limit.MAX_BUCKETS):
        buckets.take(f"user{k}")
    clock[0] = 10.0  # every bucket so far has refilled: as good as none
    for _ in range(3):
        buckets.take("busy")
    buckets.take("new")  # one over the bound: the refilled ones go
    assert len(buckets._tokens) == 2
    assert buckets.take("busy") > 0  # a drained bucket is kept: its user stays limited
