"""Schedules built, checked and priced once per shape: a collective of the same op on the same group, tensor size
and dtype gets the same steps and the same price every time it runs, so a training loop builds, checks and prices
each of its collectives at its first step and afterwards only moves the data.

Why it is safe: the steps and the price are pure functions of the key (the topology's links are fixed, and the key
holds the topology itself, not its id); collectives that share GW-Links with others (a ledger) are priced each time
and never kept here. Bounded: past LIMIT shapes the store starts again (a long-lived controller runs many jobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence

from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.transfer_schedule import Step, Transfer, check_hazards

LIMIT = 4096


@dataclass
class Schedule:
    """A collective's steps and their price; `checked` once every step has passed check_hazards. `moving`: the
    transfers of each step that moves data, what a transport runs (the same object every time the schedule runs)."""

    steps: list[Step]
    result: CollectiveResult
    checked: bool = False
    moving: Sequence[Sequence[Transfer]] = field(init=False)

    def __post_init__(self) -> None:
        self.moving = tuple(step.transfers for step in self.steps if step.transfers)

    def check(self) -> None:
        """No IPU reads what another transfer of the same step writes: what lets a transport run a step's reads and
        writes in any order. Run once per shape, before the first time the data moves."""
        if not self.checked:
            for step in self.steps:
                if step.transfers:
                    check_hazards(step)
            self.checked = True


_known: dict[Hashable, Schedule] = {}


def known(key: Hashable, make: Callable[[], Schedule]) -> Schedule:
    """The schedule stored under `key`, made (and stored) the first time."""
    schedule = _known.get(key)
    if schedule is None:
        if len(_known) >= LIMIT:
            _known.clear()
        schedule = _known[key] = make()
    return schedule
