"""Python's cycle collector in a process that lives long and keeps most of what it makes: the controller.

Why: a collection walks every tracked object of the generations it collects, and CPython moves what survives a
young collection into older generations that later collections walk again, twice more before it is old. In the
controller nearly everything that survives a young collection is a record that lives as long as its job (the job,
its history, its priority row, its queue entries). A cycle that starts two thousand jobs on a Pod of 65,536 IPUs
paid for them three times: its middle-generation and full collections took 15-40 ms of its 110-180
(bench/bench_scheduler_cycle.py --scale-only, load average 2-6; docs/benchmarks.md).

So what is alive at the start is frozen (gc.freeze, as Python's docs advise for objects that live as long as the
process), and so are the survivors of every later collection, as it ends: each object is walked once, by the
young collection after it was made, and reference cycles that die before it are still reclaimed by it. (A freeze
also sets the collection counters to zero: no middle-generation or full collection runs between sweeps.) The
price: a reference cycle that outlives a young collection and dies later (an exception kept past its handler, say)
is not reclaimed while it stays frozen; objects without cycles are still freed by reference counting. So every
SWEEP_EVERY-th collection unfreezes everything, and the next full collection CPython runs (after FULL_AFTER + 1
middle-generation ones, once what survived those is a quarter of what the last full one kept) walks it all and
frees what leaked; then its survivors are frozen again. One long pause now and then, and what may leak is bounded
by what one sweep period makes.
"""

from __future__ import annotations

import gc
from typing import Callable

FULL_AFTER = 1  # middle-generation collections, beyond the first, before a full one (CPython's default: 10)
SWEEP_EVERY = 2000  # collections per sweep (about 800 of the bench's cycles on 65,536 IPUs). A sweep walks the whole
# heap: 0.45 million tracked objects with 10,000 pending jobs on 65,536 IPUs, 1.1 million with 100,000 on a Pod1024,
# 0.3-2 s at load average 5-6; the 2,000 young collections before it take about as long (1 ms each at that load)


class _Survivors:
    """The gc callback: freezes each collection's survivors; every `sweep_every`-th unfreezes all instead, and
    freezes again once the full collection that follows has walked everything."""

    def __init__(self, sweep_every: int):
        self.sweep_every = sweep_every
        self.collections = 0  # since the last sweep
        self.sweeping = False

    def __call__(self, phase: str, info: dict) -> None:
        if phase != "stop":
            return
        if self.sweeping:
            if info["generation"] == 2:  # the sweep's full collection has walked what was frozen: freeze again
                self.sweeping = False
                gc.freeze()
            return
        self.collections += 1
        if self.collections >= self.sweep_every:
            self.collections = 0
            self.sweeping = True
            gc.unfreeze()  # into the oldest generation: the next full collection walks it all
        else:
            gc.freeze()  # (moves whole generation lists: O(1), whatever the heap)


def keep_long_lived(sweep_every: int = SWEEP_EVERY) -> Callable[[], None]:
    """Collect, then freeze what is alive now and the survivors of every later collection; returns the undo (the
    benchmark runs it between its rows; the server never does). vipu-server calls it once it has loaded its
    records, and bench/bench_scheduler_cycle.py once it has filled its Pod."""
    survivors = _Survivors(sweep_every)
    gc.collect()  # garbage made while loading is not frozen with the records
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], FULL_AFTER)
    gc.callbacks.append(survivors)

    def undo() -> None:
        gc.callbacks.remove(survivors)
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return undo
