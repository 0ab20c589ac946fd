"""Every refusal carries google.rpc.Status details: ErrorInfo with a stable reason, BadRequest naming the field and
its fix for bad input, ResourceInfo for the object it is about, PreconditionFailure for a state that forbids it;
read as any client reads them, with grpc_status.rpc_status.from_call."""

from __future__ import annotations

import json

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.server.test_auth import secure  # noqa: F401 - the fixture
from vipu.errors import InvalidArgument, NotFound
from vipu.server.refusals import DOMAIN, details
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc, job_pb2 as j, job_pb2_grpc, partition_pb2 as p, partition_pb2_grpc

KINDS = {"ErrorInfo": error_details_pb2.ErrorInfo, "BadRequest": error_details_pb2.BadRequest,
         "ResourceInfo": error_details_pb2.ResourceInfo, "PreconditionFailure": error_details_pb2.PreconditionFailure}
SLEEP = {"ipus": 4, "time_limit": "10m", "workload": {"kind": "sleep", "duration": 600}}


def spec(**fields) -> bytes:
    return json.dumps({**SLEEP, **fields}).encode()


def refusal(call) -> tuple[grpc.StatusCode, dict]:
    """The status code and the details of a refused call, by detail type."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    status = rpc_status.from_call(info.value)  # also checks that code and message agree with the call's
    assert status is not None, f"no details on {info.value.code()}: {info.value.details()}"
    found = {}
    for packed in status.details:
        name = packed.type_url.rsplit(".", 1)[-1]
        found[name] = KINDS[name]()
        assert packed.Unpack(found[name])
    assert found["ErrorInfo"].domain == DOMAIN
    return info.value.code(), found


def fields(found: dict) -> list[str]:
    return [v.field for v in found["BadRequest"].field_violations] if "BadRequest" in found else []


@pytest.fixture
def api(server_factory, tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text("max_jobs: 3\n")
    server = server_factory(extra=["--scheduler-config", str(config)])
    with grpc.insecure_channel(server.address) as channel:
        yield (job_pb2_grpc.JobServiceStub(channel), partition_pb2_grpc.PartitionServiceStub(channel),
               admin_pb2_grpc.AdminServiceStub(channel), channel)


def test_bad_input_names_the_field_and_the_fix(api):
    jobs, partitions, admin, _ = api
    cases = [
        (lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec(ipus="four")), timeout=5), ["spec.ipus"], "integer"),
        (lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec(dependency="afterok:999")), timeout=5),
         ["spec.dependency"], "does not exist"),
        (lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec(), overrides_json="[1]"), timeout=5),
         ["overrides_json"], "JSON object"),
        (lambda: jobs.SubmitJobs(j.SubmitJobsRequest(), timeout=5), ["jobs"], "give at least one spec"),
        (lambda: jobs.ListJobs(j.ListJobsRequest(states=["XX"]), timeout=5), ["states"], "use one of"),
        (lambda: jobs.History(j.HistoryRequest(page_token="nonsense"), timeout=5), ["page_token"], "next_page_token"),
        (lambda: jobs.Priorities(j.PrioritiesRequest(page_size=-1), timeout=5), ["page_size"], "give 0"),
        (lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=12), timeout=5), ["size"],
         "use 8 or 16"),
        (lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="", size=4), timeout=5), ["name"],
         "give a name"),
        (lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=4, allocation="../x"),
                                            timeout=5), ["allocation"], "use ASCII letters"),
        (lambda: partitions.GetPartition(p.GetPartitionRequest(name="x", gcd=-1), timeout=5), None, None),
        (lambda: admin.CreateAgent(a.CreateAgentRequest(name="q", port=0), timeout=5), ["port"], "1 to 65535"),
        (lambda: admin.FailIpus(a.FailIpusRequest(ipus=[999]), timeout=5), ["ipus"], "IPUs 0 to 63"),
    ]
    for call, want, fix in cases:
        code, found = refusal(call)
        if want is None:  # (a partition that does not exist is found missing before its gcd is read)
            assert code == grpc.StatusCode.NOT_FOUND
            continue
        assert code == grpc.StatusCode.INVALID_ARGUMENT and found["ErrorInfo"].reason == "INVALID_FIELD", found
        assert fields(found) == want, found
        assert fix in found["BadRequest"].field_violations[0].description


def test_a_malformed_request_has_its_own_reason(api):
    _, _, _, channel = api
    raw = channel.unary_unary("/vipu.v1.JobService/SubmitJob")
    code, found = refusal(lambda: raw(b"\xff\xfe\x00garbage\x8a", timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["ErrorInfo"].reason == "MALFORMED_REQUEST"


def test_refusals_about_an_object_name_it_and_its_state(api):
    jobs, partitions, admin, _ = api
    [pending] = jobs.SubmitJob(j.SubmitJobRequest(spec=spec(ipus=64, hold=True)), timeout=5).job_ids
    partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=8), timeout=5)
    partitions.AcquirePartition(p.HoldPartitionRequest(name="a", holder="me"), timeout=5)
    cases = [
        (lambda: jobs.GetJob(j.GetJobRequest(id=999), timeout=5), grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND",
         ("job", "999")),
        (lambda: jobs.CancelJobs(j.JobIdsRequest(ids=[998]), timeout=5), grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND",
         ("job", "998")),
        (lambda: jobs.HoldJobs(j.JobIdsRequest(ids=[997]), timeout=5), grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND",
         ("job", "997")),
        (lambda: jobs.RequeueJobs(j.JobIdsRequest(ids=[pending]), timeout=5), grpc.StatusCode.FAILED_PRECONDITION,
         "WRONG_STATE", None),
        (lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec(), request_id="r1"), timeout=5), None, None, None),
        (lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec(ipus=8), request_id="r1"), timeout=5),
         grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED", None),
        (lambda: partitions.GetPartition(p.GetPartitionRequest(name="zz"), timeout=5), grpc.StatusCode.NOT_FOUND,
         "PARTITION_NOT_FOUND", ("partition", "zz")),
        (lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="a", size=8), timeout=5),
         grpc.StatusCode.ALREADY_EXISTS, "PARTITION_EXISTS", ("partition", "a")),
        (lambda: partitions.RemovePartition(p.RemovePartitionRequest(name="a"), timeout=5),
         grpc.StatusCode.FAILED_PRECONDITION, "PARTITION_IN_USE", ("partition", "a")),
        (lambda: partitions.CreatePartition(p.CreatePartitionRequest(name="b", size=64), timeout=5),
         grpc.StatusCode.RESOURCE_EXHAUSTED, "NO_FREE_IPUS", ("allocation", "default")),
        (lambda: admin.GetUser(a.NameRequest(name="nobody"), timeout=5), grpc.StatusCode.NOT_FOUND,
         "USER_NOT_FOUND", ("user", "nobody")),
        (lambda: admin.CreateAgent(a.CreateAgentRequest(name="extra"), timeout=5),
         grpc.StatusCode.FAILED_PRECONDITION, "NO_MACHINE_WITHOUT_AGENT", None),
        (lambda: admin.CreateAgent(a.CreateAgentRequest(name="ag00b", machine=0), timeout=5),
         grpc.StatusCode.ALREADY_EXISTS, "AGENT_EXISTS", ("agent", "ag00")),
    ]
    for call, want, reason, resource in cases:
        if want is None:
            call()
            continue
        code, found = refusal(call)
        assert (code, found["ErrorInfo"].reason) == (want, reason), found
        if resource is not None:
            info = found["ResourceInfo"]
            assert (info.resource_type, info.resource_name) == resource
            assert dict(found["ErrorInfo"].metadata) == {"resource_type": resource[0], "resource_name": resource[1]}
        if want == grpc.StatusCode.FAILED_PRECONDITION:
            [violation] = found["PreconditionFailure"].violations
            assert violation.type == reason and violation.description
            assert violation.subject == (f"{resource[0]}/{resource[1]}" if resource else "")
        if reason == "REQUEST_ID_REUSED":
            assert fields(found) == ["request_id"]


def test_a_full_queue_says_so(api):
    jobs, _, _, _ = api
    held = j.SubmitJobRequest(spec=spec(hold=True))
    for _ in range(3):  # the api fixture's controller takes 3 jobs at most
        jobs.SubmitJob(held, timeout=5)
    code, found = refusal(lambda: jobs.SubmitJob(held, timeout=5))
    assert (code, found["ErrorInfo"].reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "QUEUE_FULL")


def test_refusals_of_a_secure_controller_say_which_key_is_wrong(secure):  # noqa: F811
    server, _, admin_key, new_user = secure
    key = new_user("bob")
    with grpc.insecure_channel(server.address) as channel:
        partitions, admin = partition_pb2_grpc.PartitionServiceStub(channel), admin_pb2_grpc.AdminServiceStub(channel)
        cases = [
            (lambda: partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5),
             grpc.StatusCode.UNAUTHENTICATED, "ACCESS_KEY_MISSING"),
            (lambda: partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5, metadata=bearer("no")),
             grpc.StatusCode.UNAUTHENTICATED, "ACCESS_KEY_UNKNOWN"),
            (lambda: admin.ListUsers(a.ListRequest(), timeout=5, metadata=bearer(key)),
             grpc.StatusCode.PERMISSION_DENIED, "ADMIN_REQUIRED"),
        ]
        for call, want, reason in cases:
            code, found = refusal(call)
            assert (code, found["ErrorInfo"].reason) == (want, reason)
        partitions.CreatePartition(p.CreatePartitionRequest(name="mine", size=4), timeout=5,
                                   metadata=bearer(admin_key))
        code, found = refusal(lambda: partitions.RemovePartition(p.RemovePartitionRequest(name="mine"), timeout=5,
                                                                  metadata=bearer(key)))
        # another user's partition is missing to bob, in the words used for one that does not exist
        assert (code, found["ErrorInfo"].reason) == (grpc.StatusCode.NOT_FOUND, "PARTITION_NOT_FOUND")


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


def test_details_stay_small_enough_for_the_metadata_a_client_takes():
    """A refusal travels in trailing metadata (8 KB by default on a client): a long one keeps only its ErrorInfo."""
    long = details(InvalidArgument("size is " + "9" * 6000, violations=(("size", "x" * 6000),)), None)
    assert long.message == f"size is {'9' * 64}... (6,000 characters)"  # the echo cut
    assert [d.type_url.rsplit(".", 1)[-1] for d in long.details] == ["ErrorInfo", "BadRequest"]
    many = InvalidArgument("bad", violations=tuple((f"field{i}", "y " * 500) for i in range(20)))
    assert [d.type_url.rsplit(".", 1)[-1] for d in details(many, None).details] == ["ErrorInfo"]  # too much
    short = details(NotFound("job 3 does not exist", resource=("job", "3")), None)
    assert [d.type_url.rsplit(".", 1)[-1] for d in short.details] == ["ErrorInfo", "ResourceInfo"]
