"""gRPC requests and latency by service, method and status code, counted at the edge by a server interceptor, as
go-grpc-prometheus and py-grpc-prometheus count them: grpc_server_started_total, grpc_server_handled_total and
grpc_server_handling_seconds with grpc_type, grpc_service (vipu.v1.JobService), grpc_method (SubmitJob) and
grpc_code (OK, NOT_FOUND: Python's names of the status codes, as py-grpc-prometheus gives them)."""

from __future__ import annotations

import time
from typing import Callable

import grpc

from vipu.control.instruments import Metrics

UNARY = "unary"  # the only kind counted: the streaming calls are health watches and reflection


def service_and_method(full_method: str) -> tuple[str, str]:
    """"/vipu.v1.JobService/SubmitJob" -> ("vipu.v1.JobService", "SubmitJob")."""
    service, _, method = full_method.lstrip("/").rpartition("/")
    return service, method


class UnaryInterceptor(grpc.ServerInterceptor):
    """Wraps each unary method's handler once (`wrap`, a subclass's); streaming calls (health watches, reflection)
    pass through unwrapped."""

    def __init__(self):
        # full method name -> (the servicer's handler, our wrapper of it). Why: building the wrapper and looking up
        # its label children is a good part of a small RPC's cost, and the servicer's handlers are fixed; a
        # different handler (an auth refusal is a new one each call) gets a wrapper of its own and takes the cache
        # (so refusals between successes cost what every call cost before the cache, no more).
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        cached = self._wrapped.get(handler_call_details.method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        behaviour = self.wrap(handler.unary_unary, handler_call_details.method)
        wrapped = grpc.unary_unary_rpc_method_handler(
            behaviour,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        self._wrapped[handler_call_details.method] = (handler, wrapped)
        return wrapped

    def wrap(self, inner, full_method: str):
        """The behaviour to serve `full_method` with, around `inner(request, context)`."""
        raise NotImplementedError


def served(inner, request, context, done: Callable[[str, float], None]):
    """inner(request, context)'s reply; then, however it ended, done(its status code's name, seconds it took)."""
    start = time.perf_counter()
    code = "OK"
    try:
        return inner(request, context)
    except Exception:
        status = context.code()
        code = status.name if status is not None else "UNKNOWN"
        raise
    finally:
        done(code, time.perf_counter() - start)


def counters(metrics: Metrics, full_method: str) -> tuple[Callable[[], None], Callable[[str, float], None]]:
    """For one method: what counts a call as it starts, and what counts it as it ends (its status code's name and
    seconds taken). The request log's interceptor calls them (vipu/server/request_log.py): one wrapper around each
    call instead of one per concern, as each wrapper cost a call a few microseconds more."""
    labels = (UNARY, *service_and_method(full_method))
    seconds, handled = metrics.rpc_seconds, metrics.rpc_handled
    children = {}  # status code -> this method's (latency histogram, handled counter) for it

    def count(code: str, elapsed: float) -> None:
        child = children.get(code)
        if child is None:
            child = children[code] = (seconds.labels(*labels, code), handled.labels(*labels, code))
        child[0].observe(elapsed)
        child[1].inc()

    return metrics.rpc_started.labels(*labels).inc, count
