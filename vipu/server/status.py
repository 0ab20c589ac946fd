"""Domain errors to gRPC statuses (their code names the status; refusals.py adds the details), applied to every
servicer method by one decorator."""

from __future__ import annotations

import functools
import logging
from typing import NamedTuple, NoReturn

import grpc
from pydantic import ValidationError

from vipu.errors import DeadlineExceeded, InvalidArgument, VipuError
from vipu.server import refusals
from vipu.server.wire_times import check_times
from vipu.validation import describe, violations

log = logging.getLogger("vipu.server")


class Malformed(NamedTuple):
    """What a request that does not parse arrives as (see add_servicer)."""

    error: str


def _tolerant(parse):
    def deserialize(data: bytes):
        try:
            return parse(data)
        except Exception as e:  # noqa: BLE001 - any bytes at all may arrive
            return Malformed(str(e))

    return deserialize


def add_servicer(add, servicer, server: grpc.Server) -> None:
    """Register a servicer as its generated add_*_to_server would, but with request parsing that cannot fail:
    gRPC answers a request it cannot parse with INTERNAL "Exception deserializing request!", while a malformed
    request is the caller's mistake (INVALID_ARGUMENT). The rpc wrapper gives such a request that answer."""

    class Capture:  # the two calls generated code makes on a server
        def add_generic_rpc_handlers(self, handlers):
            pass

        def add_registered_method_handlers(self, service, handlers):
            self.service, self.handlers = service, handlers

    capture = Capture()
    add(servicer, capture)
    handlers = {name: h._replace(request_deserializer=_tolerant(h.request_deserializer))
                for name, h in capture.handlers.items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(capture.service, handlers),))
    server.add_registered_method_handlers(capture.service, handlers)


def abort(context, error: VipuError, request: object = None) -> NoReturn:
    """End the call with the error's status and its details (refusals.py), marked as the controller's."""
    context.abort_with_status(refusals.status(error, request))


def rpc(method):
    """Run a servicer method: refuse work whose deadline has passed, and turn every failure into a status with
    a message and its details, so no input can take the server down. Methods raise domain errors; they never call
    abort."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            abort(context, DeadlineExceeded("the deadline passed before the request was served"))
        if type(request) is Malformed:
            abort(context, InvalidArgument(f"the request is not a valid {method.__name__} request ({request.error});"
                                           " build it from protos/vipu/v1", reason="MALFORMED_REQUEST"))
        try:
            check_times(request)
            return method(self, request, context)
        except VipuError as e:
            error = e
        except ValidationError as e:
            error = InvalidArgument(describe(e, "request"), violations=tuple(violations(e)))
        except (ValueError, OverflowError) as e:  # e.g. a protobuf field out of range for the domain
            error = InvalidArgument(f"invalid request: {e}")
        except Exception as e:  # noqa: BLE001 - the server keeps serving; the log has the traceback
            log.exception("unexpected error in %s", method.__name__)
            error = VipuError(f"internal error in {method.__name__}: {type(e).__name__}: {e}")
        abort(context, error, request)

    return wrapper
