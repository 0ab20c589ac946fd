"""The controller as a gRPC server: health, reflection, status codes, deadlines, and surviving any input."""

from __future__ import annotations

import json
import sqlite3
import time

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from vipu.cli.failure import UNREACHABLE, fail_rpc
from vipu.errors import ORIGIN
from vipu.partition.admin_records import User
from vipu.server.status import rpc
from vipu.store import Store
from vipu.v1 import admin_pb2, admin_pb2_grpc, job_pb2, job_pb2_grpc, partition_pb2 as p, partition_pb2_grpc


def stubs_of(server):
    with grpc.insecure_channel(server.address) as channel:
        yield partition_pb2_grpc.PartitionServiceStub(channel), admin_pb2_grpc.AdminServiceStub(channel), channel


@pytest.fixture
def stubs(server):
    yield from stubs_of(server)


@pytest.fixture
def unchanged_stubs(unchanged_server):
    """The module's one controller, for the tests that only read or are refused."""
    yield from stubs_of(unchanged_server)


def code_of(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def test_reflection_lists_every_service(unchanged_stubs):
    _, _, channel = unchanged_stubs
    services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert {"vipu.v1.PartitionService", "vipu.v1.AdminService", "grpc.health.v1.Health"} <= services


@pytest.mark.parametrize(
    "request_, status",
    [
        (p.CreatePartitionRequest(name="a", size=3), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="a", size=2**40), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="a", size=4, num_gcds=0), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="a", size=4, num_gcds=-2), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="a", size=4, gcd_sync_replicas=-1), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="\x00\x01", size=4), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="", size=4), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="a", size=4, allocation="../etc"), grpc.StatusCode.INVALID_ARGUMENT),
        (p.CreatePartitionRequest(name="slurm_7", size=4), grpc.StatusCode.INVALID_ARGUMENT),  # job 7's name
    ],
)
def test_bad_requests_get_invalid_argument_and_the_server_keeps_serving(unchanged_stubs, request_, status):
    partitions, _, _ = unchanged_stubs
    code, details = code_of(lambda: partitions.CreatePartition(request_, timeout=5))
    assert code == status and details
    assert partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5).partitions == []


def test_status_codes_follow_the_domain(stubs):
    partitions, admin, _ = stubs
    partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=8), timeout=5)
    assert code_of(lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=8), timeout=5))[0] == grpc.StatusCode.ALREADY_EXISTS
    assert code_of(lambda: partitions.GetPartition(p.GetPartitionRequest(name="zz"), timeout=5))[0] == grpc.StatusCode.NOT_FOUND
    partitions.AcquirePartition(p.HoldPartitionRequest(name="a", holder="job-1"), timeout=5)
    code, details = code_of(lambda: partitions.RemovePartition(p.RemovePartitionRequest(name="a"), timeout=5))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "in use by job-1" in details
    assert partitions.RemovePartition(p.RemovePartitionRequest(name="a", force=True), timeout=5).state == "REMOVED"
    partitions.CreatePartition(p.CreatePartitionRequest(name="all", size=64), timeout=5)
    code, details = code_of(lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="b", size=1), timeout=5))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "0 IPUs free" in details
    code, _ = code_of(lambda: admin.FailIpus(admin_pb2.FailIpusRequest(ipus=[999]), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT


def test_an_agent_without_host_or_port_gets_the_defaults_and_a_port_of_0_is_refused(stubs):
    """Regression: port 0 on the wire was read as unset and became 8080 without a word."""
    _, admin, _ = stubs
    for machine in (14, 15):
        admin.RemoveAgent(admin_pb2.NameRequest(name=f"ag{machine}"), timeout=5)
    made = admin.CreateAgent(admin_pb2.CreateAgentRequest(name="plain", machine=15), timeout=5)
    assert (made.host, made.port) == ("127.0.0.1", 8080)
    for fields, details in [
        (dict(port=0), "port (--port) is 0; give a TCP port from 1 to 65535"),
        (dict(port=65536), "port (--port) is 65536; give a TCP port from 1 to 65535"),
        (dict(port=-1), "port (--port) is -1; give a TCP port from 1 to 65535"),
        (dict(host=""), "host (--host) '' is empty; give the agent's DNS name or IP address"),
    ]:
        request = admin_pb2.CreateAgentRequest(name="q", machine=14, **fields)
        code, got = code_of(lambda: admin.CreateAgent(request, timeout=5))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details in got, (fields, got)
    assert [x.name for x in admin.ListAgents(admin_pb2.ListRequest(), timeout=5).agents][-2:] == ["ag13", "plain"]


def test_a_running_jobs_partition_cannot_be_released_by_a_caller(stubs, server):
    """"job N" is the scheduler's holder: released by a caller, the partition could be removed and its IPUs given to
    another while job N still ran on them."""
    partitions, _, channel = stubs
    jobs = job_pb2_grpc.JobServiceStub(channel)
    spec = json.dumps({"ipus": 4, "time_limit": "10m", "workload": {"kind": "sleep", "duration": 600}}).encode()
    [job] = jobs.SubmitJob(job_pb2.SubmitJobRequest(spec=spec), timeout=5).job_ids
    deadline = time.monotonic() + 20
    while jobs.GetJob(job_pb2.GetJobRequest(id=job), timeout=5).state != "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    for call in (partitions.ReleasePartition, partitions.AcquirePartition):
        code, details = code_of(lambda: call(p.HoldPartitionRequest(name=f"slurm_{job}", holder=f"job {job}"), timeout=5))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and f"vipu cancel {job}" in details
    code, details = code_of(lambda: partitions.RemovePartition(p.RemovePartitionRequest(name=f"slurm_{job}"), timeout=5))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    jobs.CancelJobs(job_pb2.CancelJobsRequest(ids=[job]), timeout=5)


class FakeContext:
    aborted = trailing = None

    def __init__(self, remaining: float | None = None):
        self.remaining = remaining

    def time_remaining(self):
        return self.remaining

    def abort_with_status(self, status):
        self.aborted, self.trailing = (status.code, status.details), status.trailing_metadata
        raise grpc.RpcError(status.details)


def test_an_expired_deadline_is_refused_not_served():
    class Servicer:
        served = False

        @rpc
        def Create(self, request, context):
            self.served = True

    servicer, context = Servicer(), FakeContext(remaining=0.0)
    with pytest.raises(grpc.RpcError):
        servicer.Create(None, context)
    assert context.aborted[0] == grpc.StatusCode.DEADLINE_EXCEEDED and not servicer.served


def test_a_store_that_cannot_be_written_is_unavailable_and_marked_as_the_controllers(tmp_path, monkeypatch, capsys):
    """UNAVAILABLE tells a client to retry; the origin mark tells the CLI it is the controller's own message (a
    transport UNAVAILABLE, a server that is down, gets the 'cannot reach' line instead)."""
    store = Store(tmp_path / "s.db")

    def disk_full(rows, gone, history):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store, "_write", disk_full)

    class Servicer:
        @rpc
        def Submit(self, request, context):
            store.commit([("user", "a", User(name="a", key_sha256="0" * 64, created_at=1.0))], [])

    context = FakeContext()
    with pytest.raises(grpc.RpcError):
        Servicer().Submit(None, context)
    code, details = context.aborted
    assert code == grpc.StatusCode.UNAVAILABLE and "database or disk is full" in details and "retry" in details
    assert ORIGIN in context.trailing

    class Refused(grpc.RpcError):
        def code(self):
            return code

        def details(self):
            return details

        def trailing_metadata(self):
            return context.trailing

    with pytest.raises(SystemExit) as exit_:
        fail_rpc("vipu", Refused(), "127.0.0.1:8090")
    assert exit_.value.code == UNREACHABLE
    assert capsys.readouterr().err == f"vipu: error: {details}\n"


def test_a_tiny_client_deadline_leaves_state_whole(stubs):
    partitions, _, _ = stubs
    try:
        partitions.CreatePartition(p.CreatePartitionRequest(name="late", size=4), timeout=1e-6)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    listed = partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5).partitions
    assert [(x.name, x.size, x.state) for x in listed] in ([], [("late", 4, "ACTIVE")])


def test_garbage_bytes_on_a_method_do_not_crash_the_server(unchanged_stubs):
    partitions, _, channel = unchanged_stubs
    raw = channel.unary_unary("/vipu.v1.PartitionService/CreatePartition")
    code, details = code_of(lambda: raw(b"\xff\xfe\x00garbage\x8a", timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # gRPC's own answer would be INTERNAL: the caller's mistake
    assert details.startswith("the request is not a valid CreatePartition request (Error parsing message")
    assert partitions.GetVersion(p.GetVersionRequest(), timeout=5).ipus == 64
