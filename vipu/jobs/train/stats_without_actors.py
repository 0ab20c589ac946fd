"""What the machines would report, for a controller that runs `--ray off` and so has no machine actors to ask: the
per-IPU figures from the running training jobs' step reports, the link bytes from the counters their in-process
transports count into.

Why from the step reports: without actors the same training runs in-process (LocalTransport) and reports, every
step, each IPU's utilisation and tile SRAM: the figures the actors' stats would hold. Per IPU: the last step of the
running job on it (utilisation and SRAM are of the work running now; an IPU with no running job is absent, i.e.
idle). Link bytes are not folded from the steps: each collective's exact per-IPU traffic is counted as it runs
(vipu/fabric/traffic.py), into counters that outlive the run, summed per machine as the actors sum theirs.

The output has the shape of Machine.stats() (vipu/workers/machine.py), so the metrics collector and `vipu top`
read either source with the same code (vipu/workers/telemetry.py). A modelled job (execute: false) computes nothing
anywhere, so with actors too its IPUs read its predicted step from here (with_modelled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from vipu.hardware.figures import LINK_TYPES

if TYPE_CHECKING:
    from vipu.jobs.train.results import StepReport


def machine_stats(running: Iterable[Sequence[StepReport]], links: Mapping[int, Mapping[str, Sequence[int]]],
                  ipus_per_machine: int) -> dict[int, dict]:
    """Machine.stats()-shaped reports of the machines with a running job's IPU or link traffic so far. `running`:
    each running job's steps so far; `links`: machine -> link type -> [sent, received] bytes so far
    (TrafficCounters.by_machine). Each says "actor": False (no machine actor answered for it)."""
    out: dict[int, dict] = {}

    def machine(m: int) -> dict:
        return out.setdefault(m, {"machine": m, "actor": False, "per_ipu": {}, "streaming": {"used_bytes": 0},
                                  "links": {}})

    for steps in running:
        if not steps:
            continue
        for ipu, report in steps[-1].ipus.items():
            m = machine(ipu // ipus_per_machine)
            m["per_ipu"][ipu] = {"utilisation": report.utilisation, "sram_used_bytes": report.memory_bytes}
            m["streaming"]["used_bytes"] += report.streaming_bytes
    for m, kinds in links.items():
        totals = {kind: kinds.get(kind, (0, 0)) for kind in LINK_TYPES}
        machine(m)["links"] = {kind: {"sent_bytes": sent, "received_bytes": received}
                               for kind, (sent, received) in totals.items()}
    return out


def with_modelled(stats: dict[int, dict], running: Iterable[Sequence[StepReport]],
                  ipus_per_machine: int) -> dict[int, dict]:
    """The machine actors' stats, with the IPUs of running modelled jobs (execute: false) reading their predicted
    step, as they read without actors: such a job computes nothing on the actors, which would show its IPUs idle."""
    modelled = [steps for steps in running if steps and steps[-1].modelled]
    for m, predicted in machine_stats(modelled, {}, ipus_per_machine).items():
        report = stats.setdefault(m, predicted)  # a machine whose actor did not answer: the prediction alone
        if report is predicted:
            continue
        for ipu, reading in predicted["per_ipu"].items():
            report.setdefault("per_ipu", {}).setdefault(ipu, {}).update(reading)
        streaming = report.setdefault("streaming", {})
        streaming["used_bytes"] = streaming.get("used_bytes", 0) + predicted["streaming"]["used_bytes"]
    return stats
