"""Virtual time of a schedule: alpha-beta per link, step by step, from the transfers the data path really runs.

A step lasts as long as its slowest transfer. A transfer of m bytes on a route costs the route's alpha (one IPU-Link
latency per hop, or one GW latency) plus the time its busiest link needs to carry everything on it this step: a link
direction carrying several transfers in the same step shares its bandwidth among them (contention), so it needs
sum(bytes on it) / bandwidth. GW-Links held by other collectives at the same time (ledger.py) give this one only
bandwidth / users. For a ring step (every transfer one hop, one per link) this is alpha + chunk / bandwidth. Then
the receivers reduce what they got: gamma x the most bytes any IPU adds in the step (hardware/links.py: BSP does not
overlap this compute with the exchange). The collective's time is the sum of its steps, so a fidelity check against
the analytic bound (bounds.py) measures the schedule itself, not a formula restated.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

from vipu.fabric.transfer_schedule import Step
from vipu.hardware.figures import GW_LINK, IPU_LINK
from vipu.hardware.links import LinkId, LinkModel


@dataclass(frozen=True)
class PhaseCost:
    name: str
    steps: int
    virtual_s: float


@dataclass(frozen=True)
class CollectiveResult:
    """What a collective cost: virtual seconds, steps, bytes sent per link type (a transfer's payload counts once,
    however many hops it takes), per phase, and per IPU {link type: [sent, received]} for the machines' counters."""

    op: str
    virtual_s: float
    steps: int
    bytes_per_link_type: dict[str, int]
    phases: tuple[PhaseCost, ...] = ()
    traffic: dict[int, dict[str, list[int]]] = field(default_factory=dict, repr=False)


def step_seconds(step: Step, links: LinkModel, itemsize: int, within: frozenset[int] | None,
                 users: Callable[[LinkId], int] | None = None) -> tuple[float, list[tuple[str, int, int, int]]]:
    """The step's virtual time, and its transfers as (link type, src, dst, bytes)."""
    load: dict[LinkId, int] = defaultdict(int)
    routed = []
    reduced: dict[int, int] = defaultdict(int)
    for t in step.transfers:
        nbytes = t.numel * itemsize
        route = links.route(t.src, t.dst, within)
        for link in route.links:
            load[link] += nbytes
        routed.append((route, t, nbytes))
        if t.reduce:
            reduced[t.dst] += nbytes
    drain = {}
    for link, nbytes in load.items():
        share = users(link) if users is not None and link[0] != "ipu" else 1
        drain[link] = nbytes * max(1, share) / links.bandwidth(link)
    slowest = max((route.alpha_s + max(drain[link] for link in route.links) for route, _, _ in routed), default=0.0)
    reduce_s = links.gamma_s_per_byte * max(reduced.values(), default=0)
    return slowest + reduce_s, [(route.kind, t.src, t.dst, nbytes) for route, t, nbytes in routed]


def schedule_cost(op: str, steps: Sequence[Step], links: LinkModel, itemsize: int, within: frozenset[int] | None,
                  users: Callable[[LinkId], int] | None = None) -> CollectiveResult:
    total = 0.0
    per_type = {IPU_LINK: 0, GW_LINK: 0}
    traffic: dict[int, dict[str, list[int]]] = defaultdict(lambda: {IPU_LINK: [0, 0], GW_LINK: [0, 0]})
    phases: dict[str, list] = {}
    counted = 0
    for step in steps:
        if not step.transfers:
            continue  # nothing to move: the step does not happen
        seconds, moved = step_seconds(step, links, itemsize, within, users)
        total += seconds
        counted += 1
        phase = phases.setdefault(step.phase, [0, 0.0])
        phase[0] += 1
        phase[1] += seconds
        for kind, src, dst, nbytes in moved:
            per_type[kind] += nbytes
            traffic[src][kind][0] += nbytes
            traffic[dst][kind][1] += nbytes
    return CollectiveResult(op, total, counted, per_type,
                            tuple(PhaseCost(name, n, s) for name, (n, s) in phases.items()), dict(traffic))
