"""Where the controller is and how to call it: flags, then VIPU_CLI_API_HOST/PORT, then localhost:8090."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field

import grpc

from vipu.cli.failure import BAD_INPUT, fail, fail_rpc
from vipu.v1 import admin_pb2_grpc, job_pb2_grpc, partition_pb2_grpc

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 8090
DEFAULT_TIMEOUT_S = 10.0


def resolve_address(host: str | None, port: int | None, prog: str) -> tuple[str, int]:
    host = host or os.environ.get("VIPU_CLI_API_HOST") or DEFAULT_HOST
    if port is None:
        raw = os.environ.get("VIPU_CLI_API_PORT")
        if raw:
            try:
                port = int(raw)
            except ValueError:
                fail(prog, f"VIPU_CLI_API_PORT is {raw!r}, not a number; set it to the controller's port", BAD_INPUT)
    port = DEFAULT_PORT if port is None else port
    if not 0 < port < 65536:
        fail(prog, f"the API port is {port}; give a TCP port from 1 to 65535", BAD_INPUT)
    return host, port


@dataclass
class Connection:
    prog: str
    host: str
    port: int
    timeout: float = DEFAULT_TIMEOUT_S
    _channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.address)
        return self._channel

    @property
    def partitions(self) -> partition_pb2_grpc.PartitionServiceStub:
        return partition_pb2_grpc.PartitionServiceStub(self.channel)

    @property
    def admin(self) -> admin_pb2_grpc.AdminServiceStub:
        return admin_pb2_grpc.AdminServiceStub(self.channel)

    @property
    def jobs(self) -> job_pb2_grpc.JobServiceStub:
        return job_pb2_grpc.JobServiceStub(self.channel)

    def call(self, method, request):
        """Call an RPC with a deadline; on failure print one line and exit with the failure's code."""
        try:
            return method(request, timeout=self.timeout, metadata=(("x-vipu-user", getpass.getuser()),))
        except grpc.RpcError as e:
            fail_rpc(self.prog, e, self.address)
