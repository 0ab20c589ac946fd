"""The one error hierarchy of vipu-sim.

Domain code raises these; the gRPC edge maps each to a status code (vipu/server/status.py) and the CLI maps status
codes to exit codes (vipu/cli/failure.py). A message always names the field or object and says what to do.
"""

import re

# Trailing metadata on every status the controller chooses (vipu/server/status.py), so a client tells it from one
# the transport made up (UNAVAILABLE for a server that is down) and prints the controller's message as it is.
ORIGIN = ("x-vipu-origin", "controller")
MAX_MESSAGE = 2000  # characters of a refusal's message
ECHO_KEEP = 64  # characters kept of a long echoed value
ECHO_LONG = 300  # an unbroken run this long is cut (a file path stays whole)
LONG_RUN = re.compile(r"\S{%d,}" % ECHO_LONG)
TRAILING = ";:,.)'\""  # what a message writes right after a value: kept after the cut


def elided(text: str) -> str:
    """`text` with every long unbroken run of characters (an echoed name or value) cut to its start and length, and
    at most MAX_MESSAGE characters. Why: gRPC carries a refusal's message in metadata, which has a hard size limit
    (one that overflows it reached the caller as a transport error instead), and a line the CLI prints stays
    readable; the controller's refusals (vipu/server/refusals.py) and the CLI's lines (vipu/cli/failure.py) both
    pass through it."""
    text = LONG_RUN.sub(_cut, text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def _cut(run: re.Match) -> str:
    """A long run cut to its start and length, the punctuation after the value kept (the message's own)."""
    value = run.group().rstrip(TRAILING)
    if len(run.group()) - len(value) > 3:  # a value of punctuation: cut whole
        value = run.group()
    return f"{value[:ECHO_KEEP]}... ({len(value):,} characters){run.group()[len(value):]}"


class VipuError(Exception):
    """Base class: `code` is the gRPC status name the edge turns it into, `reason` the stable UPPER_SNAKE cause a
    client may act on (google.rpc.ErrorInfo; docs/api.md lists them).

    Optional, for the status details the edge adds (vipu/server/refusals.py): `reason` in place of the class's;
    `field`, the field at fault when the message does not start with it (a request's field, or a path in a job
    spec such as workload.steps); `violations`, several (field, what to do) at once; `resource`, the (kind, name)
    the refusal is about (a job, a partition, a user...); `metadata`, the figures a client may restate the refusal
    with (ErrorInfo.metadata: a job's size refused in IPUs, which vipu submit -N says in nodes); `spec_index`, set
    when the refusal is about one spec of a call that carries several (SubmitJobs): which one, from 0. A violation
    whose field is None leaves the field to be read off its text, as a message's leading field is."""

    code = "INTERNAL"
    reason = "INTERNAL"
    spec_index: int | None = None

    def __init__(self, message: str, *, reason: str | None = None, field: str | None = None,
                 violations: tuple[tuple[str, str], ...] = (), resource: tuple[str, str] | None = None,
                 metadata: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        elif resource is not None and self.code in KIND_REASONS:
            self.reason = f"{resource[0].upper()}_{KIND_REASONS[self.code]}"  # JOB_NOT_FOUND, PARTITION_EXISTS
        self.violations = violations or (((field, message),) if field else ())
        self.resource = resource
        self.metadata = metadata or {}


# a refusal about one object gets a reason naming its kind: NotFound(..., resource=("job", "7")) is JOB_NOT_FOUND
KIND_REASONS = {"NOT_FOUND": "NOT_FOUND", "ALREADY_EXISTS": "EXISTS"}


class InvalidArgument(VipuError):
    """The request can never succeed as written: fix the named field."""

    code = "INVALID_ARGUMENT"
    reason = "INVALID_FIELD"


class NotFound(VipuError):
    code = "NOT_FOUND"
    reason = "NOT_FOUND"


class AlreadyExists(VipuError):
    code = "ALREADY_EXISTS"
    reason = "ALREADY_EXISTS"


class FailedPrecondition(VipuError):
    """Valid, but the current state forbids it (in use, wrong state): retrying later may work."""

    code = "FAILED_PRECONDITION"
    reason = "WRONG_STATE"


class ResourceExhausted(VipuError):
    """Valid, but there is no room now (no free aligned block, a quota)."""

    code = "RESOURCE_EXHAUSTED"
    reason = "NO_CAPACITY"


class PermissionDenied(VipuError):
    code = "PERMISSION_DENIED"
    reason = "PERMISSION_DENIED"


class Unauthenticated(VipuError):
    code = "UNAUTHENTICATED"
    reason = "UNAUTHENTICATED"


class Unavailable(VipuError):
    code = "UNAVAILABLE"
    reason = "UNAVAILABLE"


class DeadlineExceeded(VipuError):
    """What was waited for did not come in time (a collective's other members, a pipeline send): say who is
    missing, so the slow or silent party is named."""

    code = "DEADLINE_EXCEEDED"
    reason = "DEADLINE_EXCEEDED"


class MachineLost(Unavailable):
    """A machine (its actor) died or restarted while a job's work was on it: the job ends NODE_FAIL, not FAILED."""

    reason = "MACHINE_LOST"
