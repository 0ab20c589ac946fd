"""Reflection, as grpcurl uses it: list the services, then describe each from the files the server sends, under
grpc.reflection.v1alpha and under v1 (what grpcurl asks first); health answers for the server and each service."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from vipu.server.app import SERVICES
from vipu.v1 import admin_pb2, job_pb2, partition_pb2

VIPU = {descriptor.full_name: descriptor for module in (partition_pb2, admin_pb2, job_pb2)
        for descriptor in module.DESCRIPTOR.services_by_name.values()}
OTHERS = {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection", "grpc.reflection.v1.ServerReflection"}


def ask(channel: grpc.Channel, package: str, requests: list[reflection_pb2.ServerReflectionRequest]):
    """The answers of one reflection stream (v1 and v1alpha messages are the same bytes)."""
    stream = channel.stream_stream(f"/{package}.ServerReflection/ServerReflectionInfo",
                                   request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                                   response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    answers = list(stream(iter(requests), timeout=10))
    assert not any(a.HasField("error_response") for a in answers), answers
    return answers


@pytest.mark.parametrize("package", ["grpc.reflection.v1alpha", "grpc.reflection.v1"])
def test_reflection_lists_and_describes_every_vipu_v1_service(unchanged_server, package):
    with grpc.insecure_channel(unchanged_server.address) as channel:
        [listed] = ask(channel, package, [reflection_pb2.ServerReflectionRequest(list_services="")])
        names = {s.name for s in listed.list_services_response.service}
        assert names == set(VIPU) | OTHERS and set(SERVICES) == set(VIPU)
        answers = ask(channel, package, [reflection_pb2.ServerReflectionRequest(file_containing_symbol=name)
                                         for name in sorted(names)])
        pool = descriptor_pool.DescriptorPool()
        files = {}
        for answer in answers:
            for raw in answer.file_descriptor_response.file_descriptor_proto:
                file = descriptor_pb2.FileDescriptorProto.FromString(raw)
                files[file.name] = file
        while files:  # each file once what it imports is in the pool
            name = next(n for n, f in files.items() if all(d not in files for d in f.dependency))
            pool.Add(files.pop(name))
        for name in names:
            found = pool.FindServiceByName(name)
            if name in VIPU:
                assert [m.name for m in found.methods] == [m.name for m in VIPU[name].methods]
        assert pool.FindServiceByName("grpc.reflection.v1.ServerReflection").methods[0].input_type.full_name == \
            "grpc.reflection.v1.ServerReflectionRequest"


def test_health_answers_for_the_server_and_each_service(unchanged_server):
    with grpc.insecure_channel(unchanged_server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", *VIPU):
            assert health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as unknown:
            health.Check(health_pb2.HealthCheckRequest(service="vipu.v1.NoSuchService"), timeout=5)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
