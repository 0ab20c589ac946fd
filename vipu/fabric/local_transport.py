"""LocalTransport: a collective's data as numpy arrays in a dict, in-process, behind the Transport protocol.

It runs the same schedules as the machine actors (RayTransport), for fast property tests and the emulator's own
tests and benchmarks (a controller without machine actors, vipu-server --ray off, runs training on in-process
machines instead: machine_transport.py, so their capacities are checked as on the actors). With an object dtype it
also runs symbolic values, which is how the tests read off the exact reduction order. It stands in for Streaming
Memory, reserved SRAM and holds without their capacity or cost (the caller prices streaming), and a training step's
streaming and compute charge no counters here: without machine actors the controller reports the runs' step reports
instead.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from vipu.errors import NotFound, VipuError
from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.traffic import TrafficCounters
from vipu.fabric.transfer_schedule import Transfer
from vipu.fabric.transport import hand_over

if TYPE_CHECKING:
    from vipu.workers import bsp


RECORDS_KEPT = 10_000  # a training run of a million steps under --ray off kept every collective's result


class LocalTransport:
    """Tensors as flat numpy arrays keyed by (IPU, name); the last RECORDS_KEPT collectives' results kept in
    `records`, and each collective's bytes per IPU added to `counters` if given (counters shared by many transports,
    which outlive each of them). The methods are the Transport protocol's (transport.py says what each does)."""

    def __init__(self, counters: TrafficCounters | None = None) -> None:
        self.counters = counters
        self.tensors: dict[tuple[int, str], np.ndarray] = {}
        self.shapes: dict[tuple[int, str], tuple[int, ...]] = {}
        self.records: deque[CollectiveResult] = deque(maxlen=RECORDS_KEPT)
        self.offloaded: dict[tuple[int, str], tuple[np.ndarray, tuple[int, ...]]] = {}  # Streaming Memory stand-in
        self.reserved: dict[tuple[int, str], int] = {}  # bytes held with no data (reserve)
        self.held: dict[tuple[int, str], tuple[int, int]] = {}  # (SRAM, Streaming Memory) declared by hold

    deferred = False  # every call is done when it returns

    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        array = np.asarray(array)
        old = self.tensors.get((ipu, name))
        if old is not None and old.size == array.size and old.dtype == array.dtype:
            np.copyto(old, array.reshape(-1))  # the same buffer again: no fresh pages to fault in every step
        else:
            self.tensors[(ipu, name)] = np.array(array, copy=True, order="C").reshape(-1)
        self.shapes[(ipu, name)] = array.shape

    def _flat(self, ipu: int, name: str) -> np.ndarray:
        try:
            return self.tensors[(ipu, name)]
        except KeyError:
            raise NotFound(f"no tensor {name!r} on IPU {ipu}; put it there first") from None

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self._flat(ipu, name).reshape(self.shapes[(ipu, name)]).copy()

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        for ipu, array in arrays.items():
            self.put_tensor(ipu, name, array)
        if handed:
            hand_over(arrays)

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        return {ipu: self.get_tensor(ipu, name) for ipu in ipus}

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        got = self.get_tensors(name, ipus)
        return lambda: got

    def get_slice(self, ipu: int, name: str, start: int, stop: int) -> np.ndarray:
        return self._flat(ipu, name)[start:stop].copy()

    def accumulate_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray) -> None:
        flat = self._flat(ipu, name)
        flat[start:stop] += values  # local + incoming, as the machine's add_slice does

    def set_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray) -> None:
        self._flat(ipu, name)[start:stop] = values

    def free_tensor(self, ipu: int, name: str) -> None:
        if self.held.pop((ipu, name), None) is not None:  # a hold first, as the machine frees it
            return
        if (ipu, name) in self.offloaded and (ipu, name) not in self.tensors:
            del self.offloaded[(ipu, name)]
            return
        if (ipu, name) in self.reserved and (ipu, name) not in self.tensors:
            del self.reserved[(ipu, name)]
            return
        self._flat(ipu, name)
        del self.tensors[(ipu, name)], self.shapes[(ipu, name)]

    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        for ipu, name in held:
            try:
                self.free_tensor(ipu, name)
            except VipuError:
                pass

    def offload(self, name: str, ipus: Sequence[int]) -> None:
        for ipu in ipus:
            self._flat(ipu, name)
            self.offloaded[(ipu, name)] = (self.tensors.pop((ipu, name)), self.shapes.pop((ipu, name)))

    def load(self, name: str, ipus: Sequence[int]) -> None:
        for ipu in ipus:
            try:
                self.tensors[(ipu, name)], self.shapes[(ipu, name)] = self.offloaded.pop((ipu, name))
            except KeyError:
                raise NotFound(f"tensor {name!r} of IPU {ipu} is not offloaded; offload it first") from None

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        for ipu, array in arrays.items():
            array = np.array(array, copy=True, order="C")
            self.tensors.pop((ipu, name), None), self.shapes.pop((ipu, name), None)
            self.offloaded[(ipu, name)] = (array.reshape(-1), array.shape)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        self.reserved.update({(ipu, name): int(n) for ipu, n in sizes.items()})

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        self.held.update({(ipu, name): (int(sram), int(streaming)) for ipu, (sram, streaming) in held.items()})

    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        flat = self._flat(ipu, name)
        return flat.size, flat.dtype

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        """In place, with no copy of what is read: the steps are hazard-free (transport.py), so reading a range
        while the step writes others is reading the state before the step."""
        flats = {}  # IPU -> its tensor, looked up once a call
        for transfers in steps:
            for t in transfers:
                src, dst = flats.get(t.src), flats.get(t.dst)
                if src is None:
                    src = flats[t.src] = self._flat(t.src, name)
                if dst is None:
                    dst = flats[t.dst] = self._flat(t.dst, name)
                for a, b in t.ranges:
                    if t.reduce:
                        dst[a:b] += src[a:b]  # local + incoming, as the machine's add_slice does
                    else:
                        dst[a:b] = src[a:b]

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        self.records.extend([result] * times)
        if self.counters is not None:
            self.counters.add(result.traffic, times)

    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        pass  # no machine counters: the runs' step reports carry their streaming

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        pass  # no machine counters: the runs' step reports carry each IPU's utilisation
