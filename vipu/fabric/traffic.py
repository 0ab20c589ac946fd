"""Link traffic per IPU and per machine, from what each collective reports it moved (CollectiveResult.traffic).

Why one place for it: the machine actors and an in-process transport must count the same bytes for the same job.
A collective's result says exactly what each IPU sent and received on each link type (cost.schedule_cost: the
sender counts a transfer's payload as sent, the receiver as received, wherever each one is). by_machine() sums
that over each machine's IPUs: RayTransport.record sends each machine actor its share, and TrafficCounters, which
LocalTransport records into, gives the same sums for a controller without machine actors (vipu-server --ray off).

TrafficCounters are counters of the machines, not of a run: they keep counting as runs end and jobs are requeued,
as a machine actor's do, and are read whenever metrics are scraped (thread-safe: each run records from its own
thread).
"""

from __future__ import annotations

import threading
from typing import Mapping, Sequence

Traffic = Mapping[int, Mapping[str, Sequence[int]]]  # IPU -> link type -> [sent, received] bytes


def by_machine(traffic: Traffic, ipus_per_machine: int) -> dict[int, dict[str, list[int]]]:
    """Machine -> link type -> [sent, received] bytes of its IPUs (IPU i is on machine i // ipus_per_machine);
    link types that moved nothing are left out."""
    out: dict[int, dict[str, list[int]]] = {}
    for ipu, kinds in sorted(traffic.items()):
        for kind, (sent, received) in sorted(kinds.items()):
            if sent or received:
                totals = out.setdefault(ipu // ipus_per_machine, {}).setdefault(kind, [0, 0])
                totals[0] += sent
                totals[1] += received
    return out


class TrafficCounters:
    """Bytes each IPU has sent and received per link type, summed over every collective added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ipus: dict[int, dict[str, list[int]]] = {}

    def add(self, traffic: Traffic, times: int = 1) -> None:
        """Count one collective's CollectiveResult.traffic, `times` times."""
        with self._lock:
            for ipu, kinds in traffic.items():
                mine = self._ipus.setdefault(ipu, {})
                for kind, (sent, received) in kinds.items():
                    totals = mine.setdefault(kind, [0, 0])
                    totals[0] += sent * times
                    totals[1] += received * times

    def by_machine(self, ipus_per_machine: int) -> dict[int, dict[str, list[int]]]:
        """The totals so far, summed per machine as by_machine() sums one collective's."""
        with self._lock:
            return by_machine(self._ipus, ipus_per_machine)
