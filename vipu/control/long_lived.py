"""Python's cycle collector in a process that lives long and keeps most of what it makes: the controller.

Why: a full collection walks every tracked object that is not frozen, at about a microsecond each (it reads every
object they point to), and CPython runs one after ten collections of the middle generation once what survived them
is a quarter of what the last full one kept. Frozen after the start's load (gc.freeze, as Python's docs advise for
objects that live as long as the process), the loaded records are never walked again, but the jobs submitted since
pile up unfrozen: with 10,000 pending jobs on a Pod of 65,536 IPUs a full collection of 90,000 objects took
70-200 ms inside one scheduling cycle (bench/bench_scheduler_cycle.py --scale-only).

So the survivors of every full collection are frozen as it ends, a full collection may come after every second
collection of the middle generation (at most about 20,000 objects to walk, not 90,000), and the collector's count of
what it keeps starts at zero (a collection right after the freeze walks nothing). The price: a reference cycle among
frozen objects is not reclaimed while they stay frozen (objects without cycles are still freed by reference
counting). An exception caught in a request, alive at the moment of a full collection, is such a cycle. So every
SWEEP_EVERY-th full collection unfreezes everything first and walks it all: one long pause now and then, and what
leaked is bounded by what the last sweep's survivors left, instead of growing for as long as the controller runs.
"""

from __future__ import annotations

import gc
from typing import Callable

FULL_AFTER = 1  # middle-generation collections, beyond the first, before a full one (CPython's default: 10)
SWEEP_EVERY = 100  # full collections per one that walks the frozen objects too


class _Survivors:
    """The gc callback: freezes each full collection's survivors, and unfreezes all before every sweep."""

    def __init__(self, sweep_every: int):
        self.sweep_every = sweep_every
        self.full = 0  # full collections since the last sweep

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self.full += 1
            if self.full >= self.sweep_every:  # the collection that begins now walks what was frozen, too
                self.full = 0
                gc.unfreeze()
        else:
            gc.freeze()  # (the younger generations are empty after a full collection: only its survivors move)


def keep_long_lived(sweep_every: int = SWEEP_EVERY) -> Callable[[], None]:
    """Freeze what is alive now and the survivors of every later full collection; returns the undo (the benchmark
    runs it between its rows; the server never does)."""
    survivors = _Survivors(sweep_every)
    gc.freeze()
    gc.collect()  # walks nothing, so the collector counts no kept object: the next full one walks only new ones
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], FULL_AFTER)
    gc.callbacks.append(survivors)

    def undo() -> None:
        gc.callbacks.remove(survivors)
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return undo
