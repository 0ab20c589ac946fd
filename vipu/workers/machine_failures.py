"""Machine failures: which machines' actors died or restarted since the last look, each reported once.

A restart of a machine's actor means the machine rebooted: whatever it held is gone. So a machine found dead or
restarted is reported lost (the control plane then fails its IPUs, ends the jobs on them NODE_FAIL and requeues them
as their spec allows: ControlPlane.fail_ipus), and is not reported again until an admin repairs it
(`vipu-admin repair ipus`), as Slurm keeps a node DOWN until it is resumed. Ray itself is the fleet's (fleet.py);
this only compares what the actors say with what was known.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Mapping

log = logging.getLogger("vipu.machines")


class FailureWatch:
    def __init__(self, on_lost: Callable[[list[int]], None]):
        self.on_lost = on_lost
        self._restarts: dict[int, int] = {}  # machine -> restarts when last seen
        self._process: dict[int, tuple] = {}  # machine -> (node, pid) of its actor when last seen alive
        self._repaired: set[int] = set()  # repaired, not seen alive since
        self._lost: set[int] = set()  # reported, until repaired
        self._checking = threading.Lock()  # the watcher and a run that lost a machine may look at once

    def brought_up(self, machines: list[int]) -> None:
        for m in machines:
            self._restarts.setdefault(m, 0)

    def check(self, health: Mapping[int, dict], report: bool = True) -> list[int]:
        """Compare each machine's health ({alive, restarts}) with what was known; report the newly lost ones (not
        when `report` is False: a controller that is stopping kills the actors itself). Returns them."""
        with self._checking:
            lost = []
            for machine, state in health.items():
                restarts = int(state.get("restarts", 0) or 0)
                alive = state.get("alive", False)
                # Ray's restart count can lag the restart itself: a new process is a restart all the same
                process = (state.get("node"), state.get("pid"))
                if alive and machine in self._repaired:
                    self._repaired.discard(machine)
                    self._restarts[machine], self._process[machine] = restarts, process
                    continue
                moved = alive and process[1] is not None and self._process.get(machine, process) != process
                if not alive or moved or restarts > self._restarts.get(machine, 0):
                    if machine not in self._lost:
                        lost.append(machine)
                self._restarts[machine] = max(restarts, self._restarts.get(machine, 0))
                if alive and process[1] is not None:
                    self._process[machine] = process
            if lost and report:
                log.error("machines %s failed: their IPUs are out of service until repaired", lost)
                self._lost.update(lost)  # first: a collective waiting on them ends now (lost()), not after on_lost
                try:
                    self.on_lost(lost)
                except BaseException:
                    self._lost.difference_update(lost)  # reported again at the next look
                    raise
            return lost

    def lost(self) -> frozenset[int]:
        """The machines reported lost and not repaired since: a collective waiting on one of them ends (actor_calls)."""
        return frozenset(self._lost)

    def repaired(self, machines: list[int], health: Mapping[int, dict] | None = None) -> None:
        """Back in service. What `health` says of each machine (their actors asked after the repair) is its new
        normal; a machine not alive in it takes the normal from its next live report: a dead machine's next actor
        is a new process by design, and a restart still under way shows after the repair."""
        with self._checking:
            self._lost.difference_update(machines)
            for m in machines:
                state = (health or {}).get(m, {})
                if state.get("alive"):
                    self._repaired.discard(m)
                    self._restarts[m] = int(state.get("restarts", 0) or 0)
                    self._process[m] = (state.get("node"), state.get("pid"))
                else:
                    self._repaired.add(m)
