"""Server reflection under grpc.reflection.v1, the protocol grpcurl and newer clients ask first, beside v1alpha.

Why made here: grpcio-reflection (1.85) serves only grpc.reflection.v1alpha. The v1 protocol is the same messages
under another package, so the same bytes on the wire: the library's servicer answers v1 calls too, and v1's file
descriptor, v1alpha's renamed, is added to the pool so that reflection can describe v1 itself.
"""

from __future__ import annotations

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

ALPHA = reflection_pb2.DESCRIPTOR.package  # grpc.reflection.v1alpha
PACKAGE = "grpc.reflection.v1"
SERVICE_NAME = f"{PACKAGE}.ServerReflection"


def _describe_v1() -> None:
    """Put v1's file descriptor in the default pool (once; a library that brings its own wins)."""
    pool = descriptor_pool.Default()
    try:
        pool.FindServiceByName(SERVICE_NAME)
        return
    except KeyError:
        pass
    file = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(file)
    file.name, file.package = "grpc/reflection/v1/reflection.proto", PACKAGE
    file.options.Clear()
    for message in file.message_type:
        for field in message.field:
            if field.type_name:  # (set to "", it would be a type name)
                field.type_name = field.type_name.replace(f".{ALPHA}.", f".{PACKAGE}.")
    for service in file.service:
        for method in service.method:
            method.input_type = method.input_type.replace(f".{ALPHA}.", f".{PACKAGE}.")
            method.output_type = method.output_type.replace(f".{ALPHA}.", f".{PACKAGE}.")
    pool.Add(file)


def enable(service_names: tuple[str, ...], server: grpc.Server) -> None:
    """Reflection over `service_names` (which should name SERVICE_NAME too) under both v1alpha and v1."""
    _describe_v1()
    reflection.enable_server_reflection(service_names, server)
    servicer = reflection.ReflectionServicer(service_names)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME,
                                                                          {"ServerReflectionInfo": handler}),))
