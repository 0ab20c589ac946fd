"""gRPC requests and latency by method and status code, counted at the edge by a server interceptor."""

from __future__ import annotations

import time

import grpc

from vipu.control.instruments import Metrics


class MetricsInterceptor(grpc.ServerInterceptor):
    def __init__(self, metrics: Metrics):
        self.metrics = metrics
        # full method name -> (the servicer's handler, our counting wrapper of it). Why: building the wrapper and
        # looking up its label children is a good part of a small RPC's cost, and the servicer's handlers are
        # fixed; a different handler (an auth refusal is a new one each call) gets a wrapper of its own and takes
        # the cache (so refusals between successes cost what every call cost before the cache, no more).
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming: health watch and reflection, not ours to count
        cached = self._wrapped.get(handler_call_details.method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, handler_call_details.method)
        self._wrapped[handler_call_details.method] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler, full_method: str):
        method = full_method.rsplit(".", 1)[-1]  # "PartitionService/CreatePartition"
        inner = handler.unary_unary
        latency, requests = self.metrics.rpc_latency, self.metrics.rpc_requests
        children = {}  # status code -> this method's (latency histogram, request counter) for it

        def behaviour(request, context):
            start = time.perf_counter()
            code = "OK"
            try:
                return inner(request, context)
            except Exception:
                status = context.code()
                code = status.name if status is not None else "UNKNOWN"
                raise
            finally:
                elapsed = time.perf_counter() - start
                child = children.get(code)
                if child is None:
                    child = children[code] = (latency.labels(method, code), requests.labels(method, code))
                child[0].observe(elapsed)
                child[1].inc()

        return grpc.unary_unary_rpc_method_handler(
            behaviour,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
