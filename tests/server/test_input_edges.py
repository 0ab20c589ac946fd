"""Input at the edges (issue 23, finding 10): a refusal echoing a huge value stays within gRPC's metadata limit and
arrives as the refusal, nesting too deep to read is INVALID_ARGUMENT, and date and number errors name their field."""

from __future__ import annotations

import grpc
import pytest

from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc
from vipu.v1 import partition_pb2 as p
from vipu.v1 import partition_pb2_grpc

HUGE = "x" * 20000


def refused(call, request) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call(request, timeout=10)
    return e.value


@pytest.fixture
def stubs(unchanged_server):  # every test here is refused: one controller for them all
    with grpc.insecure_channel(unchanged_server.address) as channel:
        yield partition_pb2_grpc.PartitionServiceStub(channel), job_pb2_grpc.JobServiceStub(channel)


def test_huge_echoed_values_are_shortened_not_a_transport_error(stubs):
    partitions, jobs = stubs
    for call, request in [(partitions.GetPartition, p.GetPartitionRequest(name=HUGE)),
                          (partitions.RemovePartition, p.RemovePartitionRequest(name=HUGE)),
                          (partitions.ResetPartition, p.ResetPartitionRequest(name=HUGE)),
                          (partitions.CreatePartition, p.CreatePartitionRequest(name="ok", size=1, allocation=HUGE)),
                          (jobs.SubmitJob, j.SubmitJobRequest(spec=b'{"ipus": 1' + b"0" * 20000 + b"}"))]:
        e = refused(call, request)
        assert e.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT), (call, e.details()[:200])
        assert len(e.details()) < 2100 and "x" * 100 not in e.details() and "0" * 100 not in e.details()


def test_nesting_too_deep_is_invalid_argument(stubs):
    _, jobs = stubs
    deep = '{"name": ' + "[" * 3000 + "]" * 3000 + "}"
    e = refused(jobs.SubmitJob, j.SubmitJobRequest(spec=b'{"ipus": 1}', overrides_json=deep))
    assert (e.code(), e.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "overrides_json is nested too deeply to"
                                       " read; send a flat object of spec fields")
    e = refused(jobs.SubmitJob, j.SubmitJobRequest(spec=deep.replace('"name"', '"ipus": 1, "name"').encode()))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT  # and said as nesting, not as syntax to fix:
    assert e.details() == ("invalid job spec: it nests lists or mappings deeper than it can be read; no field takes"
                           " more than a few levels")


def test_date_and_number_errors_name_their_field(stubs):
    _, jobs = stubs
    e = refused(jobs.SubmitJob, j.SubmitJobRequest(spec=b'{"ipus": 1, "begin": "2026-13-45"}'))
    assert e.details().startswith("invalid job spec: begin: '2026-13-45' is not a time: ")
    e = refused(jobs.SubmitJob, j.SubmitJobRequest(spec=b'{"ipus": 1e308}'))
    assert e.details().startswith("invalid job spec: ipus: ") and len(e.details()) < 300
