"""What the machines would report, derived from training runs' step reports: the per-IPU and link figures of a
controller that runs `--ray off` and so has no machine actors to ask.

Why from the step reports: without actors the same training runs in-process (runner.local_transport) and reports,
every step, each IPU's utilisation and tile SRAM and the bytes the step sent per link type; these are the figures
the actors' counters would hold. The output has the shape of Machine.stats() (vipu/workers/machine.py), so the
metrics collector and `vipu top` read either source with the same code (vipu/workers/telemetry.py).

Per IPU: the last step of the running job on it (utilisation and SRAM are of the work running now; an IPU with no
running job is absent, i.e. idle). Link bytes are counters: `fold` adds each step once, as steps arrive, and the
totals keep counting after the run ends. A step reports its job's bytes, not each machine's: they are split over
the job's machines by their share of its IPUs. That is exact for the collectives' rings (every IPU of a ring sends
the same bytes) and an approximation for pipeline sends; the Pod-wide total equals the actors' either way.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Hashable, Iterable, Mapping, Sequence

from vipu.partition.pod import LINK_TYPES

if TYPE_CHECKING:
    from vipu.jobs.train.report import StepReport


class StepTelemetry:
    def __init__(self, ipus_per_machine: int):
        self.ipus_per_machine = ipus_per_machine
        self._lock = threading.Lock()  # scrapes and `vipu top` fold at once
        self._counted: dict[Hashable, int] = {}  # run key -> its steps already in the link counters
        self._links: dict[int, dict[str, list[int]]] = {}  # machine -> link type -> [sent, received] bytes

    def fold(self, runs: Mapping[Hashable, Sequence[StepReport]]) -> None:
        """Add to the link counters the steps not counted yet. `runs`: every run still known, by a key unique to
        the run (its steps may grow meanwhile: a run's thread appends them). A run no longer given is forgotten;
        steps it made after the last fold are not counted."""
        with self._lock:
            counted = {}
            for key, steps in runs.items():
                done = self._counted.get(key, 0)
                new = list(steps[done:])
                for report in new:
                    self._count(report)
                counted[key] = done + len(new)
            self._counted = counted

    def _count(self, report: StepReport) -> None:
        share = self._shares(report.ipus)
        for kind, nbytes in report.bytes_per_link_type.items():
            for machine, part in split(nbytes, share).items():
                totals = self._links.setdefault(machine, {k: [0, 0] for k in LINK_TYPES}).setdefault(kind, [0, 0])
                totals[0] += part
                totals[1] += part  # the job's traffic stays within its partition: what one IPU sends, another receives

    def _shares(self, ipus: Iterable[int]) -> dict[int, int]:
        """Machine -> how many of these (Pod-wide) IPUs it holds."""
        share: dict[int, int] = {}
        for ipu in ipus:
            machine = ipu // self.ipus_per_machine
            share[machine] = share.get(machine, 0) + 1
        return share

    def stats(self, running: Iterable[Sequence[StepReport]]) -> dict[int, dict]:
        """Machine.stats()-shaped reports of the machines with link traffic so far or a running job's IPU; `running`:
        each running job's steps so far. Each says "actor": False (no machine actor answered for it)."""
        out: dict[int, dict] = {}

        def machine(m: int) -> dict:
            return out.setdefault(m, {"machine": m, "actor": False, "per_ipu": {}, "streaming": {"used_bytes": 0},
                                      "links": {}})

        for steps in running:
            if not steps:
                continue
            for ipu, report in steps[-1].ipus.items():
                m = machine(ipu // self.ipus_per_machine)
                m["per_ipu"][ipu] = {"utilisation": report.utilisation, "sram_used_bytes": report.memory_bytes}
                m["streaming"]["used_bytes"] += report.streaming_bytes
        with self._lock:
            for m, kinds in self._links.items():
                machine(m)["links"] = {kind: {"sent_bytes": sent, "received_bytes": received}
                                       for kind, (sent, received) in kinds.items()}
        return out


def split(nbytes: int, share: Mapping[int, int]) -> dict[int, int]:
    """`nbytes` over machines in proportion to `share` (machine -> IPUs), in whole bytes that add up to `nbytes`:
    the remainder goes one byte each to the lowest-numbered machines."""
    total = sum(share.values())
    if not total:
        return {}
    parts = {m: nbytes * n // total for m, n in sorted(share.items())}
    for m in list(parts)[: nbytes - sum(parts.values())]:
        parts[m] += 1
    return parts
