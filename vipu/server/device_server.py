"""The controller's second gRPC server: the DeviceService users' programs reach their IPUs through
(VIPU_DEVICE_ADDRESS), with health checking and reflection as the main server has.

Why a server of its own: a collective waits at a rendezvous until every instance of the program has called it, so
its calls hold a thread while they wait; on the API's few threads (app.py DEFAULT_RPC_THREADS) a handful of waiting
programs would stop the queue's commands. Its pool is sized for waiting, not for work: each run may have a few calls
in flight (calls_in_flight.py), and by default the pool holds every run's at once.
"""

from __future__ import annotations

from concurrent import futures

import grpc

from vipu.sdk.device_channel import MAX_MESSAGE_BYTES
from vipu.server.calls_in_flight import CallsInFlight
from vipu.server.device_service import DeviceService
from vipu.server.listen import add_health_and_reflection, bind, check_listen
from vipu.server.status import add_servicer
from vipu.v1 import device_pb2, device_pb2_grpc

SERVICE = device_pb2.DESCRIPTOR.services_by_name["DeviceService"].full_name


def build_device_server(plane, host: str, port: int, threads: int, tls: tuple[bytes, bytes] | None = None
                        ) -> tuple[grpc.Server, int]:
    """The DeviceService on host:port (0: a free port) with `threads` threads (calls_in_flight.default_threads:
    enough for every run's calls at once); `tls` as app.build_server takes it. Raises OSError when it cannot listen
    (PortInUse when another process holds the port)."""
    check_listen(host, port, "--device-port")  # first, so a refusal is our one line and not gRPC's log line too
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="vipu-device"),
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                  ("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.so_reuseport", 0)])
    service = DeviceService(plane, CallsInFlight(threads))
    add_servicer(device_pb2_grpc.add_DeviceServiceServicer_to_server, service, server)
    add_health_and_reflection(server, (SERVICE,))
    bound = bind(server, host, port, tls)
    if bound == 0:
        raise OSError(f"cannot serve the IPUs' data path on {host}:{port}: the port is in use or the address is not"
                      " local; pick another --device-port (0: a free one; -1: off)")
    return server, bound
