"""What a step costs the machines, on their own counters: its Streaming Memory traffic and its compute.

Why here and shared: the built-in training (parallel.py) and a program's session (vipu/jobs/sessions) charge the
machines the same way, so `vipu top` and the metrics read a user's program as they read built-in training.
- streaming: once a step per machine, its IPUs' bytes as one duplex batch (hardware/streaming_cost.py duplex_s: one
  latency, reads and writes in parallel at the machine's bandwidth);
- compute: one BSP compute set per machine standing for the step, each IPU's own compute as tile cycles and the
  rest of the step (its collectives, pipeline idle) as exchange, so each IPU's phases add up to the emulated step and
  the machine's utilisation (compute / step) is the step's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from vipu.fabric.transport import Transport
from vipu.hardware.pod import PodConfig
from vipu.hardware.streaming_cost import duplex_s
from vipu.workers import bsp

STEPS_KEPT = 64  # distinct step figures kept (step_costs keeps them per Pod across runs; a steady loop has one)


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


def charge_compute(transport: Transport, pod: PodConfig, compute_s: Mapping[int, float], step_s: float,
                   name: str, dtype: str, built: dict | None = None) -> None:
    """Add a step of `step_s` to each machine's BSP counters, IPU i having computed compute_s[i] of it.

    built: where the steps are kept by their figures, so that a training loop, whose steps all cost the same, builds
    them once and hands the machines the same objects (Machine.run_step then prices each once)."""
    if built is None:
        transport.record_compute(_steps(pod, compute_s, step_s, name, dtype))
        return
    key = (tuple(compute_s.items()), step_s, name, dtype)
    steps = built.get(key)
    if steps is None:
        if len(built) >= STEPS_KEPT:
            built.clear()
        steps = built[key] = _steps(pod, compute_s, step_s, name, dtype)
    transport.record_compute(steps)


def _steps(pod: PodConfig, compute_s: Mapping[int, float], step_s: float, name: str,
           dtype: str) -> dict[int, bsp.Step]:
    ipu_spec = pod.ipu
    per_machine: dict[int, list[int]] = defaultdict(list)
    for ipu in compute_s:
        per_machine[ipu // pod.machine.ipus].append(ipu)
    steps = {}
    for machine, ipus in sorted(per_machine.items()):
        busiest = max(compute_s[ipu] for ipu in ipus)
        rest = max(0.0, step_s - busiest - ipu_spec.sync_s)
        work = {ipu: bsp.IpuWork(cycles=compute_s[ipu] * ipu_spec.clock_hz,
                                 exchange_bytes=int(rest * ipu_spec.exchange_bytes_per_s)) for ipu in ipus}
        steps[machine] = bsp.Step(name=name, compute_sets=[bsp.ComputeSet(name=name, dtype=dtype, ipus=work)])
    return steps
