"""gRPC requests and latency by method and status code, counted at the edge by a server interceptor."""

from __future__ import annotations

import time

import grpc

from vipu.metrics.instruments import Metrics


class MetricsInterceptor(grpc.ServerInterceptor):
    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming: health watch and reflection, not ours to count
        method = handler_call_details.method.rsplit(".", 1)[-1]  # "PartitionService/CreatePartition"
        inner = handler.unary_unary
        requests, latency = self.metrics.rpc_requests, self.metrics.rpc_latency.labels(method)

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
                latency.observe(time.perf_counter() - start)
                requests.labels(method, code).inc()

        return grpc.unary_unary_rpc_method_handler(
            behaviour,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
