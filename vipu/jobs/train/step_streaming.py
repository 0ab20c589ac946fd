"""A training step's Streaming Memory traffic, charged as the machines charge it: once a step per machine, its IPUs'
bytes as one duplex batch (hardware/streaming_cost.py duplex_s: one latency, reads and writes in parallel at the
machine's bandwidth)."""

from __future__ import annotations

from vipu.fabric.transport import Transport
from vipu.hardware.pod import PodConfig
from vipu.hardware.streaming_cost import duplex_s


def machine_streaming_s(transport: Transport, pod: PodConfig, per_ipu: dict[int, tuple[float, float]]) -> float:
    """The busiest machine's seconds for its IPUs' (in, out) bytes; each machine's batch is charged on its own
    counters (record_streaming), at the same price."""
    totals: dict[int, tuple[float, float]] = {}
    for ipu, (got, put) in per_ipu.items():
        a, b = totals.get(ipu // pod.machine.ipus, (0.0, 0.0))
        totals[ipu // pod.machine.ipus] = (a + got, b + put)
    batches = {m: (int(a), int(b)) for m, (a, b) in totals.items()}
    transport.record_streaming(batches)
    machine = pod.machine
    return max(duplex_s(a, b, machine.streaming_memory_bytes_per_s, machine.streaming_memory_latency_s)
               for a, b in batches.values())
