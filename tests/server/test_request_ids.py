"""Every create call takes a request id, as SubmitJob does: a retry with the same id returns what the first call
made (never a second object or ALREADY_EXISTS), also after a restart; the same id for another request is refused."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.server.test_auth import secure  # noqa: F401 - the fixture
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc, partition_pb2 as p, partition_pb2_grpc


def stubs(server):
    channel = grpc.insecure_channel(server.address)
    return channel, partition_pb2_grpc.PartitionServiceStub(channel), admin_pb2_grpc.AdminServiceStub(channel)


def reason_of(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    found = error_details_pb2.ErrorInfo()
    assert rpc_status.from_call(info.value).details[0].Unpack(found)
    return info.value.code(), found.reason


def creates(partitions, admin) -> dict:
    """Each create RPC with a request id, by kind (the same id serves all: ids are per kind and caller), and what
    tells its result apart. The allocation first: the partition then goes on the agents it leaves."""
    return {
        "allocation": (lambda rid: admin.CreateAllocation(a.CreateAllocationRequest(
            name="al", agents=["ag12", "ag13"], request_id=rid), timeout=5),
            lambda x: (x.name, tuple(x.agents), x.created_at)),
        "partition": (lambda rid: partitions.CreatePartition(p.CreatePartitionRequest(
            name="p1", size=8, request_id=rid), timeout=5), lambda x: (x.name, x.first_ipu, x.created_at)),
        "agent": (lambda rid: admin.CreateAgent(a.CreateAgentRequest(name="extra", machine=15, request_id=rid),
                                                timeout=5), lambda x: (x.name, x.machine, x.created_at)),
        "user": (lambda rid: admin.CreateUser(a.CreateUserRequest(name="carol", request_id=rid), timeout=5),
                 lambda x: (x.user.name, x.user.created_at)),
    }


def made_by(calls: dict, request_id: str) -> dict:
    return {kind: key(make(request_id)) for kind, (make, key) in calls.items()}


def test_a_retried_create_returns_the_first_ones_object_also_after_a_restart(server):
    channel, partitions, admin = stubs(server)
    admin.RemoveAgent(a.NameRequest(name="ag15"), timeout=5)  # a machine for CreateAgent
    first = made_by(creates(partitions, admin), "r1")
    assert made_by(creates(partitions, admin), "r1") == first  # no ALREADY_EXISTS, no second object
    assert [x.name for x in partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5).partitions] == ["p1"]
    channel.close()

    server.restart()
    channel, partitions, admin = stubs(server)
    assert made_by(creates(partitions, admin), "r1") == first
    # the same id for another request of that kind is refused, naming the id
    code, reason = reason_of(lambda: partitions.CreatePartition(
        p.CreatePartitionRequest(name="p2", size=4, request_id="r1"), timeout=5))
    assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
    # without an id, or with a new one, a second create of the name is the conflict it always was
    for rid in ("", "r2"):
        code, reason = reason_of(lambda: partitions.CreatePartition(
            p.CreatePartitionRequest(name="p1", size=8, request_id=rid), timeout=5))
        assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "PARTITION_EXISTS")
    # once its object is removed, the id says so rather than making it again
    partitions.RemovePartition(p.RemovePartitionRequest(name="p1"), timeout=5)
    code, reason = reason_of(lambda: creates(partitions, admin)["partition"][0]("r1"))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "CREATED_OBJECT_GONE")
    channel.close()


def test_a_cluster_create_is_retried_by_its_id(server):
    channel, _, admin = stubs(server)
    agents = [x.name for x in admin.ListAgents(a.ListRequest(), timeout=5).agents]
    admin.RemoveCluster(a.NameRequest(name="cluster0"), timeout=5)
    request = a.CreateClusterRequest(name="c1", agents=agents, num_ilds=1, request_id="c")
    first = admin.CreateCluster(request, timeout=5)
    again = admin.CreateCluster(request, timeout=5)
    assert (again.name, list(again.agents), again.created_at) == ("c1", agents, first.created_at)
    channel.close()


def test_a_retried_user_create_gets_a_new_key_in_place_of_the_first(secure):  # noqa: F811
    """Only a key's hash is kept, so a retry cannot show the first key again: it gets a new one, and the first one
    stops working (whoever retried never saw it)."""
    server, _, admin_key, _ = secure
    channel = grpc.insecure_channel(server.address)
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    partitions = partition_pb2_grpc.PartitionServiceStub(channel)
    as_admin = (("authorization", f"Bearer {admin_key}"),)
    request = a.CreateUserRequest(name="dave", request_id="u1")
    first = admin.CreateUser(request, timeout=5, metadata=as_admin)
    again = admin.CreateUser(request, timeout=5, metadata=as_admin)
    assert again.user.created_at == first.user.created_at and again.access_key != first.access_key
    listed = partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5,
                                       metadata=(("authorization", f"Bearer {again.access_key}"),))
    assert list(listed.partitions) == []
    code, reason = reason_of(lambda: partitions.ListPartitions(
        p.ListPartitionsRequest(), timeout=5, metadata=(("authorization", f"Bearer {first.access_key}"),)))
    assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "ACCESS_KEY_UNKNOWN")
    channel.close()
