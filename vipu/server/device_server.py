"""The controller's second gRPC server: the DeviceService users' programs reach their IPUs through
(VIPU_DEVICE_ADDRESS), with health checking and reflection as the main server has.

Why a server of its own: a collective waits at a rendezvous until every instance of the program has called it, so
its calls hold a thread while they wait; on the API's few threads (app.py DEFAULT_RPC_THREADS) a handful of waiting
programs would stop the queue's commands. Its pool is sized for waiting, not for work.
"""

from __future__ import annotations

from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from vipu.server.device_service import DeviceService
from vipu.server.status import add_servicer
from vipu.v1 import device_pb2, device_pb2_grpc

DEFAULT_DEVICE_THREADS = 32  # calls that may wait at once, over every running program
MAX_MESSAGE_BYTES = 1 << 30  # a tensor of up to 1 GiB in one call (gRPC's default is 4 MiB)
SERVICE = device_pb2.DESCRIPTOR.services_by_name["DeviceService"].full_name


def build_device_server(plane, host: str, port: int, threads: int = DEFAULT_DEVICE_THREADS,
                        tls: tuple[bytes, bytes] | None = None) -> tuple[grpc.Server, int]:
    """The DeviceService on host:port (0: a free port); `tls` as app.build_server takes it. Raises OSError when it
    cannot listen."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="vipu-device"),
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                  ("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.so_reuseport", 0)])
    add_servicer(device_pb2_grpc.add_DeviceServiceServicer_to_server, DeviceService(plane), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", SERVICE):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        if tls is None:
            bound = server.add_insecure_port(f"{host}:{port}")
        else:
            bound = server.add_secure_port(f"{host}:{port}", grpc.ssl_server_credentials([tls]))
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(f"cannot serve the IPUs' data path on {host}:{port}: the port is in use or the address is not"
                      " local; pick another --device-port (0: a free one; -1: off)")
    return server, bound
