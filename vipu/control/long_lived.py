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
objects that outlived a full collection is never reclaimed; the controller's records hold none, and objects without
cycles are still freed by reference counting.
"""

from __future__ import annotations

import gc
from typing import Callable

FULL_AFTER = 1  # middle-generation collections, beyond the first, before a full one (CPython's default: 10)


def _freeze_survivors(phase: str, info: dict) -> None:
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()  # (the younger generations are empty after a full collection: only its survivors move)


def keep_long_lived() -> Callable[[], None]:
    """Freeze what is alive now and the survivors of every later full collection; returns the undo (the benchmark
    runs it between its rows; the server never does)."""
    gc.freeze()
    gc.collect()  # walks nothing, so the collector counts no kept object: the next full one walks only new ones
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], FULL_AFTER)
    gc.callbacks.append(_freeze_survivors)

    def undo() -> None:
        gc.callbacks.remove(_freeze_survivors)
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return undo
