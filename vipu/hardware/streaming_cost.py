"""What moving bytes between tile SRAM and Streaming Memory (a machine's DRAM, behind its gateway) costs.

Neither Graphcore's bandwidth nor its latency is published: both come from the preset (machine.
streaming_memory_bytes_per_s, streaming_memory_latency_s, stated there as assumptions). One transfer costs
alpha-beta, one latency and then the bytes at full rate. A batch of transfers (a training step's offloaded
optimiser state, phased execution's weights and stash) reads and writes at once, the gateway loading the next chunk
while it stores the last, so it costs one latency plus the longer direction. The planner (jobs/timing.py) and the
emulated machines (workers/streaming_memory.py) both charge these.
"""

from __future__ import annotations


def transfer_s(nbytes: float, bytes_per_s: float, latency_s: float) -> float:
    """One transfer of `nbytes` either way: latency + bytes / bandwidth."""
    return latency_s + nbytes / bytes_per_s


def duplex_s(bytes_in: float, bytes_out: float, bytes_per_s: float, latency_s: float) -> float:
    """One batch of streaming, reads and writes in parallel: latency + the longer direction / bandwidth (nothing
    to move costs nothing)."""
    longer = max(bytes_in, bytes_out)
    return latency_s + longer / bytes_per_s if longer > 0 else 0.0
