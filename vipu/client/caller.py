"""How a call reaches the controller: one channel (TLS or plaintext), who is calling, a deadline on every call,
retries of idempotent calls while the controller is unreachable, every page of a list call, and each failure as
one ApiError."""

from __future__ import annotations

import socket
import ssl
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import grpc

from vipu.client import paging
from vipu.client.backoff import Backoff
from vipu.client.api_error import ARGUMENTS, BAD_SETTING, TLS_MISMATCH, ApiError
from vipu.client.settings import Settings
from vipu.v1 import job_pb2_grpc

if TYPE_CHECKING:
    from vipu.v1 import admin_pb2_grpc, partition_pb2_grpc

DEFAULT_TIMEOUT_S = 10.0
# a queue of 10,000+ jobs is more than gRPC's default 4 MB reply limit
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 512 * 1024 * 1024)]
HOSTNAME_MISMATCH = (62, 64)  # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
REQUEST_ID = "x-request-id"  # one per call, the same on its retries: the controller's log line names it (docs/logging.md)
PAGE_TRIES = 3  # a listing the controller no longer keeps is started again this often
LISTING_EXPIRED = "LISTING_EXPIRED"
# UNAVAILABLE that waiting does not mend: something else listening, or a controller whose disk does not write (it
# answered: its message says what changed and the fix, where retrying would say "not answering")
NOT_RETRIED = ("NOT_A_CONTROLLER", "STORE_UNAVAILABLE")


def new_request_id() -> str:
    """uuid.uuid4().hex, made as uuid4 makes it (16 random bytes, version 4, RFC 4122's variant): the uuid module
    imports platform and asks the kernel for the machine's name, a few ms of every CLI call."""
    data = bytearray(os.urandom(16))
    data[6] = data[6] & 0x0F | 0x40
    data[8] = data[8] & 0x3F | 0x80
    return data.hex()


class Caller:
    """`timeout`: seconds each call may take, and how long an idempotent call is retried while the controller is
    unreachable (a restart after a crash), waiting `backoff`'s delays between tries. `clock` and `sleep` are the
    tests' to replace."""

    def __init__(self, settings: Settings, timeout: float = DEFAULT_TIMEOUT_S, backoff: Backoff | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 names: dict[str, str] = ARGUMENTS):
        self.settings, self.timeout = settings, timeout
        self.names = names  # what its own messages call the settings (api_error.ARGUMENTS, or the CLI's FLAGS)
        self.backoff = backoff or Backoff()
        self.clock, self.sleep = clock, sleep
        self._channel: grpc.Channel | None = None

    @property
    def address(self) -> str:
        return self.settings.address

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            ca = self.settings.tls_ca
            if ca:
                try:
                    root = Path(ca).read_bytes()
                    ssl.create_default_context(cafile=ca)  # else gRPC logs 8 lines and only says it cannot connect
                except ssl.SSLError as e:
                    raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, BAD_SETTING,
                                   f"the TLS CA file {ca} is not a PEM certificate ({e.reason}); give the CA"
                                   " certificate that signed the controller's (-----BEGIN CERTIFICATE-----)") from None
                except OSError as e:
                    raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, BAD_SETTING,
                                   f"cannot read the TLS CA file {ca}: {e.strerror}") from None
                self._channel = grpc.secure_channel(self.address, grpc.ssl_channel_credentials(root), CHANNEL_OPTIONS)
            else:
                self._channel = grpc.insecure_channel(self.address, CHANNEL_OPTIONS)
        return self._channel

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    @property
    def partition_service(self) -> partition_pb2_grpc.PartitionServiceStub:  # imported here: vipu queue and
        from vipu.v1 import partition_pb2_grpc  # vipu submit, the commands run in loops, need none of it

        return partition_pb2_grpc.PartitionServiceStub(self.channel)

    @property
    def admin_service(self) -> admin_pb2_grpc.AdminServiceStub:  # imported here: vipu-admin's, and few of vipu's
        from vipu.v1 import admin_pb2_grpc

        return admin_pb2_grpc.AdminServiceStub(self.channel)

    @property
    def job_service(self) -> job_pb2_grpc.JobServiceStub:
        return job_pb2_grpc.JobServiceStub(self.channel)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        pairs = [("x-vipu-user", self.settings.user)]
        if self.settings.access_key:
            pairs.append(("authorization", f"Bearer {self.settings.access_key}"))
        return tuple(pairs)

    def call(self, method, request, retry: bool = False, waiting: Callable[[], None] | None = None):
        """The reply of `method(request)` (a stub's method), or ApiError.

        `retry`: for idempotent calls (a create with its request id), keep retrying while the controller is
        unreachable until the timeout has passed; `waiting()` is called once, when the retries start."""
        deadline = self.clock() + self.timeout
        metadata = (*self.metadata(), (REQUEST_ID, new_request_id()))
        attempt = 0
        while True:
            left = deadline - self.clock()
            try:
                return method(request, timeout=max(left, 0.05), metadata=metadata)
            except grpc.RpcError as e:
                error = ApiError.of_call(e, self.address, self.names)
                down = e.code() == grpc.StatusCode.UNAVAILABLE and not error.from_controller
                # a TLS mismatch does not mend by waiting: probe for it once, when the first try fails
                if down and attempt == 0 and (problem := self.tls_problem()):
                    raise ApiError(grpc.StatusCode.UNAVAILABLE, TLS_MISMATCH, problem) from None
                if not (retry and error.code == grpc.StatusCode.UNAVAILABLE and error.reason not in NOT_RETRIED
                        and left > 0.25):
                    raise error from None
                if attempt == 0 and waiting is not None:
                    waiting()
                # never past the deadline: the last try gets what is left
                self.sleep(min(self.backoff.delay(attempt), left - 0.25))
                attempt += 1

    def every_page(self, method, request, retry: bool = False):
        """Every page of a list call merged into one response of its type (its list field holds every item), all
        from one moment; a listing the controller no longer keeps is started again (paging.py). `retry`: each page
        as call()'s."""
        return paging.every_page(lambda asked: self.call(method, asked, retry), request,
                                 gone=lambda e: isinstance(e, ApiError) and e.reason == LISTING_EXPIRED,
                                 tries=PAGE_TRIES)

    def items(self, method, request):
        """Each item of a list call, a page at a time (the first page's moment: a listing the controller no longer
        keeps midway raises ApiError LISTING_EXPIRED)."""
        for reply in paging.pages(lambda asked: self.call(method, asked), request):
            yield from paging.items_of(reply)

    def tls_problem(self) -> str | None:
        """Why the controller could not be reached, when the reason is TLS. gRPC reports a plaintext client talking
        to a TLS controller, and a certificate that does not verify, as the same UNAVAILABLE as a stopped server,
        with the reason only in free text; one handshake of our own tells them apart. Run once, when a call's first
        try failed, so a working setup pays nothing and a stopped server costs one refused connect."""
        ca = self.settings.tls_ca
        context = ssl.create_default_context(cafile=ca)
        if not ca:  # only asking whether the controller speaks TLS at all
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        host, port = self.settings.host, self.settings.port
        try:
            with socket.create_connection((host, port), timeout=min(self.timeout, 2.0)) as raw:
                context.wrap_socket(raw, server_hostname=host).close()
        except ssl.SSLCertVerificationError as e:
            fix = (f"connect by a name the certificate lists ({self.names['host']})"
                   if e.verify_code in HOSTNAME_MISMATCH
                   else "give the CA that signed the controller's certificate")
            return (f"the TLS certificate of the controller at {self.address} did not verify against the CA in {ca}"
                    f" ({e.verify_message}); {fix}")
        except ssl.SSLError as e:
            if not ca:
                return None  # not TLS either: something else is wrong
            return (f"the controller at {self.address} did not complete a TLS handshake ({e.reason or e}); if it"
                    f" runs without --tls-cert, drop {self.names['tls_ca']} (and VIPU_CLI_TLS_CA, tls-ca in"
                    " the config file)")
        except OSError:
            return None  # nothing listens there: the usual 'cannot reach'
        if ca:
            return None  # TLS works: something else is wrong
        names = self.names
        return (f"the controller at {self.address} speaks TLS and {names['self']} connected without it; pass"
                f" {names['tls_ca']} with the CA certificate that signed the controller's (or set VIPU_CLI_TLS_CA)")
