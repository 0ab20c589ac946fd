"""The one error hierarchy of vipu-sim.

Domain code raises these; the gRPC edge maps each to a status code (vipu/server/status.py) and the CLI maps status
codes to exit codes (vipu/cli/failure.py). A message always names the field or object and says what to do.
"""


# Trailing metadata on every status the controller chooses (vipu/server/status.py), so a client tells it from one
# the transport made up (UNAVAILABLE for a server that is down) and prints the controller's message as it is.
ORIGIN = ("x-vipu-origin", "controller")


class VipuError(Exception):
    """Base class: `code` is the gRPC status name the edge turns it into."""

    code = "INTERNAL"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgument(VipuError):
    """The request can never succeed as written: fix the named field."""

    code = "INVALID_ARGUMENT"


class NotFound(VipuError):
    code = "NOT_FOUND"


class AlreadyExists(VipuError):
    code = "ALREADY_EXISTS"


class FailedPrecondition(VipuError):
    """Valid, but the current state forbids it (in use, wrong state): retrying later may work."""

    code = "FAILED_PRECONDITION"


class ResourceExhausted(VipuError):
    """Valid, but there is no room now (no free aligned block, a quota)."""

    code = "RESOURCE_EXHAUSTED"


class PermissionDenied(VipuError):
    code = "PERMISSION_DENIED"


class Unauthenticated(VipuError):
    code = "UNAUTHENTICATED"


class Unavailable(VipuError):
    code = "UNAVAILABLE"


class DeadlineExceeded(VipuError):
    """What was waited for did not come in time (a collective's other members, a pipeline send): say who is
    missing, so the slow or silent party is named."""

    code = "DEADLINE_EXCEEDED"


class MachineLost(Unavailable):
    """A machine (its actor) died or restarted while a job's work was on it: the job ends NODE_FAIL, not FAILED."""
