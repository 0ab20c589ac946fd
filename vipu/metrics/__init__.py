"""The controller's Prometheus metrics: what is registered on its registry, in one place."""

from __future__ import annotations

from prometheus_client import ProcessCollector, disable_created_metrics

from vipu.metrics.build_info import BuildInfo
from vipu.metrics.collector import StateCollector


def register(plane) -> None:
    """The state gauges, the process's own series (process_cpu_seconds_total, process_resident_memory_bytes, open
    file descriptors), and vipu_build_info, on the plane's registry. No `_created` series: they doubled every
    counter and histogram's lines, and Prometheus reads a counter's resets without them."""
    disable_created_metrics()
    registry = plane.metrics.registry
    registry.register(StateCollector(plane))
    ProcessCollector(registry=registry)
    registry.register(BuildInfo())
