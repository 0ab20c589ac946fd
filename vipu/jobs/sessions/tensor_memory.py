"""The controller's budget of host memory for the tensors programs keep (vipu-server --tensor-memory): what every
open session holds on its IPUs and in Streaming Memory, counted in the arrays' bytes, first come first served.

Why: the emulated machines keep a program's tensors in the host's RAM (the controller's with --ray off, the machine
actors' beside it otherwise), and the only other limit is the emulated capacity (256 GB of Streaming Memory per
machine), far above the RAM. One program's puts in 8 MiB chunks once grew the controller to 1.4 GB in 40 s: the OOM
killer would end the controller, and the restart requeue the job to do it again. A put past the budget is refused
RESOURCE_EXHAUSTED before anything is stored, naming the bytes; the capacity check stays as it was, apart.
Reserved SRAM holds no data and is not counted. The default is a quarter of the RAM (or of the cgroup's limit).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from vipu.errors import ResourceExhausted
from vipu.jobs.units import size

RAM_SHARE = 4  # the default budget: this part of the machine's RAM
def machine_ram() -> int:
    """This machine's RAM, or the controller's cgroup memory limit if lower (a container's)."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        try:
            text = limit.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            ram = min(ram, int(text))
    return ram


def default_budget() -> int:
    return machine_ram() // RAM_SHARE


class TensorMemory:
    """Bytes of tensors held over every session, against `budget`."""

    def __init__(self, budget: int | None = None):
        self.budget = default_budget() if budget is None else budget
        self.held = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int, what: str, run_holds: int) -> None:
        """Count `nbytes` more as held, or ResourceExhausted if that passes the budget (`what` names the call,
        `run_holds` the caller's run's bytes, for the message)."""
        with self._lock:
            if nbytes > 0 and self.held + nbytes > self.budget:
                raise ResourceExhausted(
                    f"{what}: {nbytes:,} bytes ({size(nbytes)}) more would pass the controller's host memory for"
                    f" tensors: programs hold {self.held:,} of its {self.budget:,} bytes ({size(self.budget)}),"
                    f" this run {run_holds:,}; free the tensors the program no longer needs (Device.free), or ask the"
                    " operator for a larger vipu-server --tensor-memory", reason="TENSOR_MEMORY",
                    metadata={"asked_bytes": str(nbytes), "held_bytes": str(self.held),
                              "budget_bytes": str(self.budget)})
            self.held += nbytes

    def give(self, nbytes: int) -> None:
        with self._lock:
            self.held = max(0, self.held - nbytes)
