"""How a program reaches its controller's DeviceService: the address and run token its job was given, the channel,
and the controller's refusals raised as vipu's errors.

Why errors as vipu.errors: a program catches what the controller means (ResourceExhausted: no room in SRAM;
DeadlineExceeded: another instance never came) rather than gRPC's transport codes, with the controller's message,
which names the IPU, the bytes and the fix.
"""

from __future__ import annotations

import os

import grpc

import vipu.errors as errors

TOKEN_METADATA = "x-vipu-run-token"  # the servicer reads the run token from here
MAX_CALL_BYTES = 1 << 30  # arrays' bytes in one call: a tensor of up to 1 GiB (gRPC's default message is 4 MiB)
MAX_MESSAGE_BYTES = MAX_CALL_BYTES + (1 << 20)  # and room for the rest of its message (names, shapes, IPU numbers)
CALL_S = 600.0  # a call that waits for nobody (the first may bring up machine actors)
ERRORS = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgument, grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.ALREADY_EXISTS: errors.AlreadyExists, grpc.StatusCode.FAILED_PRECONDITION: errors.FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhausted,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDenied, grpc.StatusCode.UNAUTHENTICATED: errors.Unauthenticated,
    grpc.StatusCode.UNAVAILABLE: errors.Unavailable, grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceeded,
}


def from_environment(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise errors.FailedPrecondition(
            f"{name} is not set: a program reaches its IPUs only as a job's run on a controller that serves them;"
            " submit it (vipu submit job.sh) to a vipu-server whose --device-port is not -1")
    return value


class Connection:
    """A channel to the DeviceService, each call carrying the run token."""

    def __init__(self, address: str, token: str, cert: str | None = None):
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
        if cert:
            self.channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(cert.encode()), options)
        else:
            self.channel = grpc.insecure_channel(address, options)
        self.address = address
        self.metadata = ((TOKEN_METADATA, token),)

    def call(self, method, request, wait_s: float = 0.0):
        """method(request), given wait_s more than a plain call to wait for other instances; a refusal raised as
        the vipu error of its status, with the controller's message."""
        try:
            return method(request, metadata=self.metadata, timeout=CALL_S + wait_s)
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.UNAVAILABLE and not e.trailing_metadata():
                raise errors.Unavailable(f"the controller's IPUs at {self.address} do not answer ({e.details()});"
                                         " is the job's controller still running?") from None
            raise ERRORS.get(code, errors.VipuError)(e.details() or code.name) from None

    def close(self) -> None:
        self.channel.close()
