"""The one exception vipu.client raises: a call the controller refused, or one that never reached it."""

from __future__ import annotations

import grpc

from vipu.errors import ORIGIN

# reasons the client gives failures of its own (the controller's are in its ErrorInfo; docs/api.md lists both)
UNREACHABLE = "UNREACHABLE"  # nothing answered at the address (a stopped controller, a closed port)
TIMEOUT = "TIMEOUT"  # the controller did not answer within the timeout
NOT_A_CONTROLLER = "NOT_A_CONTROLLER"  # something answered, but not a V-IPU controller (an HTTP server, ...)
TLS_MISMATCH = "TLS_MISMATCH"  # TLS on one side only, or a certificate that does not verify
BAD_SETTING = "BAD_SETTING"  # a setting (flag, VIPU_CLI_* variable, config file) cannot be used
# What the client's own messages call the settings a user may fix: Client.connect's arguments; the CLI gives its
# flags, so its lines name what its users type
ARGUMENTS = {"host": "host", "port": "port", "tls_ca": "tls_ca", "self": "the client"}
FLAGS = {"host": "--api-host", "port": "--api-port", "tls_ca": "--tls-ca", "self": "the CLI"}
# what gRPC says when the peer spoke HTTP but not gRPC (its HTTP/1 answer, or an HTTP/2 one with no gRPC status)
NOT_GRPC = ("Trying to connect an http1.x server", "Failed parsing HTTP/2", "Received http2 header with status",
            "No status received")


class ApiError(Exception):
    """A refusal or a failure to reach the controller.

    code: the grpc.StatusCode; reason: the stable UPPER_SNAKE cause (docs/api.md): the controller's (JOB_NOT_FOUND,
    INVALID_FIELD, QUEUE_FULL, ...) or the client's own (UNREACHABLE, TIMEOUT, NOT_A_CONTROLLER, TLS_MISMATCH,
    BAD_SETTING); message: one line naming the field or object and the fix; field_violations: (field, fix) for
    each field at fault (spec fields as spec.ipus); resource: (type, name) of the object it is about, or None;
    from_controller: whether the controller chose it (else the client or the network did); metadata: its
    ErrorInfo's (the figures of some refusals, docs/api.md)."""

    def __init__(self, code: grpc.StatusCode, reason: str, message: str,
                 field_violations: tuple[tuple[str, str], ...] = (), resource: tuple[str, str] | None = None,
                 from_controller: bool = False, metadata: dict[str, str] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.field_violations, self.resource, self.from_controller = field_violations, resource, from_controller
        self.metadata = metadata or {}

    def __repr__(self) -> str:
        return f"ApiError({self.code.name}, {self.reason}, {self.message!r})"

    @classmethod
    def of_call(cls, error: grpc.RpcError, address: str, names: dict[str, str] | None = None) -> ApiError:
        """What a failed call means: the controller's refusal with its details, or the transport's failure.
        `names`: what to call the host and port settings (Client.connect's arguments unless the CLI's flags)."""
        code, text = error.code(), error.details() or ""
        host, port = (names or ARGUMENTS)["host"], (names or ARGUMENTS)["port"]
        if ORIGIN in (error.trailing_metadata() or ()):
            return cls._refusal(error, code, text)
        if code == grpc.StatusCode.UNIMPLEMENTED and not any(sign in text for sign in NOT_GRPC):
            # a gRPC server without this method: most often a controller of an earlier release than the client (a
            # call added since, such as ListMachines), which "not a V-IPU controller" alone sent elsewhere
            return cls(grpc.StatusCode.UNAVAILABLE, NOT_A_CONTROLLER,
                       f"{address} does not know this call ({code.name}: {text}): either a V-IPU controller of an"
                       " earlier vipu-sim than this client (upgrade it, or use the vipu of its release), or not a"
                       f" V-IPU controller (point {host} and {port}, or VIPU_CLI_API_HOST and VIPU_CLI_API_PORT, at"
                       " the controller)")
        if any(sign in text for sign in NOT_GRPC) or code not in (grpc.StatusCode.UNAVAILABLE,
                                                                 grpc.StatusCode.DEADLINE_EXCEEDED,
                                                                 grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                                 grpc.StatusCode.CANCELLED):
            return cls(grpc.StatusCode.UNAVAILABLE, NOT_A_CONTROLLER,
                       f"{address} answered, but not as a V-IPU controller ({code.name}: {text}); point {host} and"
                       f" {port} (or VIPU_CLI_API_HOST and VIPU_CLI_API_PORT) at the controller")
        if code == grpc.StatusCode.UNAVAILABLE:
            return cls(code, UNREACHABLE, f"cannot reach the V-IPU controller at {address}; is vipu-server running?"
                                          f" (set {host}/{port} or VIPU_CLI_API_HOST/VIPU_CLI_API_PORT)")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return cls(code, TIMEOUT, f"the V-IPU controller at {address} did not answer in time; retry, or allow"
                                      " a longer timeout")
        return cls(code, code.name, text or code.name)

    @classmethod
    def _refusal(cls, error: grpc.RpcError, code: grpc.StatusCode, text: str) -> ApiError:
        # imported here: a command that is not refused does not pay for them (20 ms of the CLI's start-up)
        from google.rpc import error_details_pb2
        from grpc_status import rpc_status

        reason, violations, resource, metadata = code.name, (), None, {}
        try:
            status = rpc_status.from_call(error)
        except ValueError:  # details that do not match the call: the message alone is still the controller's
            status = None
        for packed in status.details if status is not None else ():
            if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                packed.Unpack(info)
                reason = info.reason or reason
                metadata = dict(info.metadata)
            elif packed.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                packed.Unpack(bad)
                violations = tuple((v.field, v.description) for v in bad.field_violations)
            elif packed.Is(error_details_pb2.ResourceInfo.DESCRIPTOR):
                found = error_details_pb2.ResourceInfo()
                packed.Unpack(found)
                resource = (found.resource_type, found.resource_name)
        return cls(code, reason, text, violations, resource, from_controller=True, metadata=metadata)
