"""Each RPC's request id: the client's `x-request-id` (the CLI sends one per call), else one made here. It is on
every log line written while the call is served (lifecycle events, errors), and with `--log-level debug` each call
gets a line of its own: method, status, caller, time taken. The same wrapper counts the call's metrics
(vipu/metrics/interceptor.py: counters).

Why each call's own line only at debug: the controller serves thousands of calls a second, and journald drops a
unit's lines past 10,000 in 30 s by default, the lifecycle events with them.
"""

from __future__ import annotations

import logging
import time

from vipu.client.caller import new_request_id
from vipu.control.callers import Call, current, serving
from vipu.metrics.interceptor import UnaryInterceptor, counters, served, service_and_method
from vipu.server.auth import USER_METADATA, bearer
from vipu.validation import MAX_REQUEST_ID

log = logging.getLogger("vipu.rpc")
REQUEST_ID = "x-request-id"


def request_id_of(metadata) -> str:
    """The client's request id if it sent a usable one (1 to 128 printable characters, no spaces), else a new one."""
    for key, value in metadata or ():
        if key == REQUEST_ID and 0 < len(value) <= MAX_REQUEST_ID and value.isprintable() and " " not in value:
            return value
    return new_request_id()  # a UUID4's hex, made without the uuid module's object


NAMES_KEPT = 1024  # access keys whose user's name is remembered (a controller has far fewer users)


class RequestLog(UnaryInterceptor):
    def __init__(self, plane):
        super().__init__()
        self.plane = plane
        self._names: dict[str, str] = {}  # access key -> its user's name, for log lines only (auth checks anew)

    def caller(self, context) -> str:
        """Who calls, worked out as the call starts. Why then: the lines that name the caller are written as
        changes commit, under the state lock, which looking a key up takes too."""
        metadata = context.invocation_metadata() or ()
        key = bearer(metadata)
        if not self.plane.secure or key is None:
            return next((value for k, value in metadata if k == USER_METADATA), "") or "unknown"
        name = self._names.get(key)
        if name is None:
            user = self.plane.user_for_key(key)
            if user is None:  # refused by the auth interceptor, which says why
                return "unknown"
            if len(self._names) >= NAMES_KEPT:
                self._names.clear()
            name = self._names[key] = user.name
        return name

    def wrap(self, inner, full_method: str):
        service, method = service_and_method(full_method)
        name = f"{service}/{method}"
        started, count = counters(self.plane.metrics, full_method)

        def ended(code: str, seconds: float) -> None:  # called while the call is served: current() is it
            count(code, seconds)
            if log.isEnabledFor(logging.DEBUG):
                call, ms = current(), seconds * 1000
                log.debug("%s %s in %.1f ms", name, code, ms, extra={"fields": {
                    "event": "rpc", "grpc_service": service, "grpc_method": method, "grpc_code": code,
                    "user": call.caller, "duration_ms": round(ms, 3), "peer": call.peer()}})

        def behaviour(request, context):
            started()
            left = context.time_remaining()
            call = Call(request_id_of(context.invocation_metadata()), name, self.caller(context), context.peer,
                        None if left is None else time.monotonic() + left)
            with serving(call):
                return served(inner, request, context, ended)

        return behaviour
