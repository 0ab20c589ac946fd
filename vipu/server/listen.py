"""What both of the controller's gRPC servers (the API's, app.py; the IPUs' data path, device_server.py) do alike:
check that they may listen, read their TLS pair, serve health checking and reflection for their services, and bind
their port.
"""

from __future__ import annotations

import errno
import socket
import ssl
from pathlib import Path
from typing import Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from vipu.server import reflection_v1


class PortInUse(OSError):
    """Another process holds the port: a conflict (exit 4), where an address that is not this machine's is bad
    input (exit 2)."""


def check_listen(host: str, port: int, flag: str = "--port", host_flag: str = "--host") -> None:
    """OSError naming the fix (`flag`, `host_flag`: the options that chose them) unless a listening socket can take
    host:port now (PortInUse when another process holds it). Checked with SO_REUSEADDR, as gRPC binds: a port whose
    last connections are in TIME_WAIT, e.g. just after a crash, is free."""
    try:
        socket.create_server((host, port), family=socket.getaddrinfo(host, port)[0][0]).close()
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise PortInUse(f"cannot listen on {host}:{port}: the port is in use; stop what holds it or pick another"
                            f" {flag}") from None
        raise OSError(f"cannot listen on {host}:{port}: {e.strerror or e}; give a {host_flag} address of this"
                      " machine") from None


def add_health_and_reflection(server: grpc.Server, services: tuple[str, ...]) -> Callable[[bool], None]:
    """Health (SERVING for the server and each service) and reflection (v1alpha and v1), open to every caller.
    Returns what sets health for all of them: SERVING (True) or NOT_SERVING (False)."""
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    def serving(ok: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if ok else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *services):
            health_servicer.set(name, status)

    serving(True)
    reflection_v1.enable((*services, health.SERVICE_NAME, reflection.SERVICE_NAME, reflection_v1.SERVICE_NAME), server)
    return serving


def bind(server: grpc.Server, host: str, port: int, tls: tuple[bytes, bytes] | None) -> int:
    """The port bound (port 0: a free one), or 0 if gRPC could not; `tls` is (private key, certificate chain) in
    PEM, None for plaintext."""
    try:
        if tls is None:
            return server.add_insecure_port(f"{host}:{port}")
        return server.add_secure_port(f"{host}:{port}", grpc.ssl_server_credentials([tls]))
    except RuntimeError:
        return 0


def tls_pair(cert: Path | None, key: Path | None) -> tuple[tuple[bytes, bytes] | None, str | None]:
    """(private key, certificate chain) in PEM for TLS (--tls-cert, --tls-key), None for plaintext; or what is wrong
    with the pair. Read before the state folder is touched: a refused start makes nothing there."""
    if bool(cert) != bool(key):
        return None, "--tls-cert and --tls-key go together; give both or neither"
    if not cert:
        return None, None
    try:
        tls = (key.read_bytes(), cert.read_bytes())
        # checked here so a wrong pair gets one line naming it, not gRPC's log lines and a misleading bind error
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=lambda: b"")
    except OSError as e:  # ssl.SSLError is an OSError
        return None, (f"--tls-cert {cert} with --tls-key {key} is not a usable PEM certificate chain"
                      f" and its unencrypted private key ({e}); give the pair that belongs together")
    return tls, None
