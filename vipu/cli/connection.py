"""Where the controller is and how to call it. Each setting comes from its flag, else the environment
(VIPU_CLI_API_HOST, VIPU_CLI_API_PORT, VIPU_CLI_API_USER_ID, VIPU_CLI_API_ACCESS_KEY, VIPU_CLI_TLS_CA), else the
config file (VIPU_CLI_CONFIG, else ~/.config/vipu/vipu-cli.hcl, else /etc/vipu/vipu-cli.hcl, in V-IPU's
`api-host = "..."` form), else the default (localhost:8090, no key, plaintext)."""

from __future__ import annotations

import getpass
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from vipu.cli.failure import BAD_INPUT, fail, fail_rpc
from vipu.v1 import admin_pb2_grpc, job_pb2_grpc, partition_pb2_grpc

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 8090
DEFAULT_TIMEOUT_S = 10.0
# a queue of 10,000+ jobs is more than gRPC's default 4 MB reply limit
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 512 * 1024 * 1024)]
CONFIG_LINE = re.compile(r'^\s*([a-z-]+)\s*=\s*"?([^"#]*?)"?\s*(#.*)?$')


def config_file() -> dict[str, str]:
    paths = [os.environ.get("VIPU_CLI_CONFIG"), Path.home() / ".config/vipu/vipu-cli.hcl", "/etc/vipu/vipu-cli.hcl"]
    for path in paths:
        if path and Path(path).is_file():
            settings = {}
            for line in Path(path).read_text().splitlines():
                match = CONFIG_LINE.match(line)
                if match:
                    settings[match.group(1)] = match.group(2).strip()
            return settings
    return {}


@dataclass
class Settings:
    host: str
    port: int
    user: str
    access_key: str | None
    tls_ca: str | None


def resolve(prog: str, host=None, port=None, user=None, access_key=None, tls_ca=None) -> Settings:
    config = config_file()

    def pick(flag, env: str, key: str):
        return flag if flag is not None else os.environ.get(env) or config.get(key) or None

    raw_port = pick(port, "VIPU_CLI_API_PORT", "api-port")
    try:
        port = DEFAULT_PORT if raw_port is None else int(raw_port)
    except ValueError:
        fail(prog, f"the API port is {raw_port!r}, not a number; set it to the controller's port", BAD_INPUT)
    if not 0 < port < 65536:
        fail(prog, f"the API port is {port}; give a TCP port from 1 to 65535", BAD_INPUT)
    return Settings(
        host=pick(host, "VIPU_CLI_API_HOST", "api-host") or DEFAULT_HOST,
        port=port,
        user=pick(user, "VIPU_CLI_API_USER_ID", "api-user-id") or getpass.getuser(),
        access_key=pick(access_key, "VIPU_CLI_API_ACCESS_KEY", "api-access-key"),
        tls_ca=pick(tls_ca, "VIPU_CLI_TLS_CA", "tls-ca"),
    )


@dataclass
class Connection:
    prog: str
    settings: Settings
    timeout: float = DEFAULT_TIMEOUT_S
    _channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return self.settings.host

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            if self.settings.tls_ca:
                try:
                    root = Path(self.settings.tls_ca).read_bytes()
                except OSError as e:
                    fail(self.prog, f"cannot read the TLS CA file {self.settings.tls_ca}: {e.strerror}", BAD_INPUT)
                self._channel = grpc.secure_channel(self.address, grpc.ssl_channel_credentials(root), CHANNEL_OPTIONS)
            else:
                self._channel = grpc.insecure_channel(self.address, CHANNEL_OPTIONS)
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

    def metadata(self) -> tuple[tuple[str, str], ...]:
        pairs = [("x-vipu-user", self.settings.user)]
        if self.settings.access_key:
            pairs.append(("authorization", f"Bearer {self.settings.access_key}"))
        return tuple(pairs)

    def call(self, method, request, retry: bool = False):
        """Call an RPC with a deadline; on failure print one line and exit with the failure's code.

        `retry`: for idempotent calls (a submit carries its request id), keep retrying while the controller is
        unreachable (e.g. restarting after a crash) until --timeout has passed."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return method(request, timeout=max(left, 0.05), metadata=self.metadata())
            except grpc.RpcError as e:
                if not (retry and e.code() == grpc.StatusCode.UNAVAILABLE and left > 0.25):
                    fail_rpc(self.prog, e, self.address)
                time.sleep(0.2)
