"""Views of a job's transport for the training data path: tensors priced in the model's dtype (PricedAs), names
scoped to one run (Scoped), and a collective's data moved without its cost recorded (Unrecorded).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.transfer_schedule import Transfer
from vipu.fabric.transport import Transport, WrappedTransport


class PricedAs(WrappedTransport):
    """A transport whose tensors are priced as `dtype` on the links; everything else is the wrapped transport's."""

    def __init__(self, inner: Transport, dtype):
        super().__init__(inner)
        self.dtype = np.dtype(dtype)

    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        numel, _ = self.inner.spec(ipu, name)
        return numel, self.dtype


class Scoped(WrappedTransport):
    """A transport whose tensor names all carry `scope`: two runs on the same machines (a requeued job starting
    while its last run's thread winds down, or the next job on a cancelled one's IPUs) each see only their own
    "params", "tp", "pp", ... and free only their own."""

    def __init__(self, inner: Transport, scope: str):
        super().__init__(inner)
        self.scope = scope

    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        return self.inner.spec(ipu, self.scope + name)

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        self.inner.run_steps(self.scope + name, steps)

    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        self.inner.put_tensor(ipu, self.scope + name, array, tiles)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self.inner.get_tensor(ipu, self.scope + name)

    def free_tensor(self, ipu: int, name: str) -> None:
        self.inner.free_tensor(ipu, self.scope + name)

    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        self.inner.free_tensors((ipu, self.scope + name) for ipu, name in held)

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        self.inner.put_tensors(self.scope + name, arrays, handed)

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        return self.inner.get_tensors(self.scope + name, ipus)

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        return self.inner.get_tensors_later(self.scope + name, ipus)

    def offload(self, name: str, ipus: Sequence[int]) -> None:
        self.inner.offload(self.scope + name, ipus)

    def load(self, name: str, ipus: Sequence[int]) -> None:
        self.inner.load(self.scope + name, ipus)

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        self.inner.put_offloaded(self.scope + name, arrays)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        self.inner.reserve(self.scope + name, sizes)

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        self.inner.hold(self.scope + name, held)


class Unrecorded(WrappedTransport):
    """A transport that moves a collective's data but records no cost: a mirror of the machines (Fabric._exchange),
    whose own collective is the one recorded."""

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        pass


class Tiled(WrappedTransport):
    """A tensor of `stacked` micro-batches, each a block of one micro-batch's elements after the one before, seen as
    one micro-batch's: spec() says one's size, so a collective plans (and prices) one micro-batch's schedule, and
    run_steps() runs each of its transfers on every block at once (the same ranges at each block's offset), so every
    element is summed in the order one micro-batch's collective sums it. The cost is recorded once per block.

    tiled: where the tiled steps are kept, keyed by the steps given (a schedule's, the same object each time it
    runs: known_schedules.Schedule.moving) and one block's size, so a training loop tiles each schedule once."""

    def __init__(self, inner: Transport, stacked: int, tiled: dict | None = None):
        super().__init__(inner)
        self.stacked = stacked
        self.tiled = {} if tiled is None else tiled

    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        numel, dtype = self.inner.spec(ipu, name)
        return numel // self.stacked, dtype

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        # steps are planned for one micro-batch of this tensor (spec), so the steps and the stack say its size
        key = (id(steps), self.stacked)
        kept = self.tiled.get(key)
        if kept is None or kept[0] is not steps:  # the steps themselves are kept too: an id is not reused meanwhile
            kept = self.tiled[key] = (steps, self._tile(steps, self.spec(steps[0][0].src, name)[0]))
        self.inner.run_steps(name, kept[1])

    def _tile(self, steps: Sequence[Sequence[Transfer]], numel: int) -> list[list[Transfer]]:
        offsets = [j * numel for j in range(self.stacked)]
        return [[t._replace(ranges=joined([(lo + at, hi + at) for at in offsets for lo, hi in t.ranges]),
                            numel=t.numel * self.stacked) for t in step] for step in steps]

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        self.inner.record(result, times * self.stacked)


def joined(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """`ranges` with each one that starts where the one before ends joined to it: the same elements, each moved or
    added once as before (a send of a whole micro-batch tiled is then one range, not one per micro-batch)."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out and lo == out[-1][1]:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)
