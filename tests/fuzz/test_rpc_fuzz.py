"""Fuzzing every RPC and the job-spec parser: no input crashes the server or yields INTERNAL/UNKNOWN, every
rejection carries a message, and the server still answers afterwards."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.errors import VipuError
from vipu.scheduler.job_spec import load_spec
from vipu.v1 import admin_pb2, job_pb2, partition_pb2

ALLOWED = {
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.PERMISSION_DENIED,
}
SCALARS = {
    FieldDescriptor.TYPE_STRING: st.one_of(st.text(max_size=80), st.sampled_from(["", "p1", "default", "ag00", "-1"])),
    FieldDescriptor.TYPE_BYTES: st.one_of(st.binary(max_size=200), st.sampled_from([b"ipus: 4", b"{}", b"\x00"])),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 300)),
    FieldDescriptor.TYPE_DOUBLE: st.floats(allow_nan=True, allow_infinity=True),
}


# Timestamps and Durations in their valid ranges (seconds and nanos of one sign): protobuf refuses to write others
TIMES = {
    "google.protobuf.Timestamp": st.builds(timestamp_pb2.Timestamp, seconds=st.integers(0, 253402300799),
                                           nanos=st.integers(0, 999_999_999)),
    "google.protobuf.Duration": st.integers(-315576000000 * 10**9, 315576000000 * 10**9).map(
        lambda n: duration_pb2.Duration(seconds=_whole(n), nanos=n - _whole(n) * 10**9)),
}


def _whole(nanoseconds: int) -> int:
    """Whole seconds, toward zero, so that the nanos left have the same sign."""
    return abs(nanoseconds) // 10**9 * (1 if nanoseconds >= 0 else -1)


def message_strategy(descriptor, depth: int = 0):
    fields = {}
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.full_name in TIMES:
            value = TIMES[field.message_type.full_name]
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if depth > 1 or field.message_type.GetOptions().map_entry:
                continue
            value = message_strategy(field.message_type, depth + 1)
        else:
            value = SCALARS[field.type]
        if field.is_repeated:
            value = st.lists(value, max_size=4)
        fields[field.name] = st.one_of(st.none(), value)

    def build(values):
        msg = descriptor._concrete_class()
        for name, value in values.items():
            if value is None:
                continue
            if isinstance(value, list):
                target = getattr(msg, name)
                if value and hasattr(value[0], "DESCRIPTOR"):
                    for item in value:
                        target.add().CopyFrom(item)
                else:
                    target.extend(value)
            elif hasattr(value, "DESCRIPTOR"):
                getattr(msg, name).CopyFrom(value)
            else:
                setattr(msg, name, value)
        return msg

    return st.fixed_dictionaries(fields).map(build)


METHODS = [
    (module, service.name, method)
    for module in (partition_pb2, admin_pb2, job_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
    if method.name not in ("KillMachine",)  # kills actors: covered by its own test; --ray off refuses it anyway
]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    from tests.conftest import ServerProcess

    server = ServerProcess(state_dir=tmp_path_factory.mktemp("fuzz"), pod="bow-pod16").start()
    yield server
    server.kill()


@pytest.mark.parametrize("module, service, method", METHODS, ids=[f"{s}.{m.name}" for _, s, m in METHODS])
def test_every_rpc_survives_random_requests(fuzz_server, module, service, method):
    channel = grpc.insecure_channel(fuzz_server.address)
    call = channel.unary_unary(
        f"/vipu.v1.{service}/{method.name}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=lambda b: b,
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(message_strategy(method.input_type))
    def check(request):
        try:
            call(request, timeout=10)
        except grpc.RpcError as e:
            assert e.code() in ALLOWED, (e.code(), e.details(), request)
            assert e.details(), request

    try:
        check()
        with grpc.insecure_channel(fuzz_server.address) as fresh:
            from vipu.v1 import partition_pb2_grpc

            assert partition_pb2_grpc.PartitionServiceStub(fresh).GetVersion(
                partition_pb2.GetVersionRequest(), timeout=10).pod == "bow-pod16"
    finally:
        channel.close()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=400), st.text(max_size=400),
                 st.dictionaries(st.sampled_from(["ipus", "name", "time_limit", "array", "dependency", "workload",
                                                  "qos", "nice", "hold", "user", "x"]),
                                 st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none()),
                                 max_size=6).map(lambda d: __import__("json").dumps(d))))
def test_the_spec_parser_only_ever_says_invalid_argument(data):
    try:
        load_spec(data, "fuzz")
    except VipuError as e:
        assert e.code == "INVALID_ARGUMENT" and e.message
