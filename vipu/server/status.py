"""One table from domain errors to gRPC status codes, applied to every servicer method by one decorator."""

from __future__ import annotations

import functools
import logging

import grpc
from pydantic import ValidationError

from vipu.errors import VipuError
from vipu.validation import describe

log = logging.getLogger("vipu.server")

STATUS = {
    "INVALID_ARGUMENT": grpc.StatusCode.INVALID_ARGUMENT,
    "NOT_FOUND": grpc.StatusCode.NOT_FOUND,
    "ALREADY_EXISTS": grpc.StatusCode.ALREADY_EXISTS,
    "FAILED_PRECONDITION": grpc.StatusCode.FAILED_PRECONDITION,
    "RESOURCE_EXHAUSTED": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "PERMISSION_DENIED": grpc.StatusCode.PERMISSION_DENIED,
    "UNAUTHENTICATED": grpc.StatusCode.UNAUTHENTICATED,
    "UNAVAILABLE": grpc.StatusCode.UNAVAILABLE,
    "INTERNAL": grpc.StatusCode.INTERNAL,
}


# Marks a status the controller chose (as opposed to one the transport made up, e.g. UNAVAILABLE for a server that
# is down), so a client prints the controller's message as it is.
ORIGIN = (("x-vipu-origin", "controller"),)


def abort(context, code: grpc.StatusCode, message: str):
    context.set_trailing_metadata(ORIGIN)
    context.abort(code, message)


def rpc(method):
    """Run a servicer method: refuse work whose deadline has passed, and turn every failure into a status with
    a message, so no input can take the server down. Methods raise domain errors; they never call abort."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, "the deadline passed before the request was served")
        try:
            return method(self, request, context)
        except VipuError as e:
            abort(context, STATUS[e.code], e.message)
        except ValidationError as e:
            abort(context, grpc.StatusCode.INVALID_ARGUMENT, describe(e, "request"))
        except (ValueError, OverflowError) as e:  # e.g. a protobuf field out of range for the domain
            abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"invalid request: {e}")
        except Exception as e:  # noqa: BLE001 - the server keeps serving; the log has the traceback
            log.exception("unexpected error in %s", method.__name__)
            abort(context, grpc.StatusCode.INTERNAL, f"internal error in {method.__name__}: {type(e).__name__}: {e}")

    return wrapper
