"""MachineTransport: the Transport protocol on the machines themselves (vipu.workers.machine.Machine), in-process.

Why beside LocalTransport: LocalTransport keeps arrays in a dict, with no capacity; a program's session must refuse
what the Pod would refuse, naming the IPU, the bytes asked and the bytes free, whether the controller runs machine
actors or not (`--ray off`). This transport calls the very Machine methods a machine actor calls (RayTransport), so
tile SRAM and Streaming Memory are checked, and counted, exactly as on the actors. Each machine comes with a lock
that serialises calls to it, as an actor serialises its calls; the machines outlive any one transport (the fleet
keeps them, as Ray keeps actors), and a collective's bytes are also added to the fleet's link counters (`counters`)
that a controller without actors reports.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from contextlib import ExitStack
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from vipu.by_identity import ByIdentity
from vipu.errors import InvalidArgument, NotFound
from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.traffic import TrafficCounters, by_machine
from vipu.fabric.transfer_schedule import Transfer
from vipu.fabric.transport import by_machine_index, hand_over, held_by_machine

if TYPE_CHECKING:
    from vipu.workers import bsp
    from vipu.workers.machine import Machine


SPLITS_KEPT = 4096  # results split per machine kept (a run's distinct collectives; a long-lived transport's bound)


class MachineTransport:
    """The Transport protocol (transport.py says what each method does) on in-process machines: machines[m] is
    (machine m, the lock serialising calls to it)."""

    deferred = False  # every call is done when it returns

    def __init__(self, machines: Mapping[int, tuple[Machine, threading.Lock]], ipus_per_machine: int,
                 counters: TrafficCounters | None = None):
        self.machines = dict(machines)
        self.ipus_per_machine = ipus_per_machine
        self.counters = counters
        self._split: ByIdentity[dict] = ByIdentity(SPLITS_KEPT)  # result -> by_machine of its traffic
        self._steps: ByIdentity[tuple] = ByIdentity(SPLITS_KEPT)  # steps -> (their IPUs, machines, sizes checked)

    def _at(self, ipu: int) -> tuple[Machine, threading.Lock, int]:
        machine, index = divmod(ipu, self.ipus_per_machine)
        try:
            m, lock = self.machines[machine]
        except KeyError:
            raise NotFound(f"IPU {ipu} is on machine {machine}, which this transport was not given; build it for"
                           " the group's machines") from None
        return m, lock, index

    def _by_machine(self, ipus: Sequence[int]) -> dict[int, list[int]]:
        for ipu in ipus:
            self._at(ipu)  # a machine it was given
        return by_machine_index(ipus, self.ipus_per_machine)

    # --- tensors ----------------------------------------------------------------------------------------------
    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        m, lock, index = self._at(ipu)
        with lock:
            m.put_tensor(index, name, array, tiles)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        """Read-only, as Ray's are, and never changed afterwards (Machine.view_tensor): no copy."""
        m, lock, index = self._at(ipu)
        with lock:
            return m.view_tensor(index, name)

    def free_tensor(self, ipu: int, name: str) -> None:
        m, lock, index = self._at(ipu)
        with lock:
            m.free_tensor(index, name)

    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        for machine, items in held_by_machine(held, self.ipus_per_machine).items():
            if machine in self.machines:
                m, lock = self.machines[machine]
                with lock:
                    m.free_each(items)

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        """In the arrays' order, each machine's lock taken once for the run of its IPUs; handed arrays held as they
        are where they can be (Machine.put_tensor)."""
        for m, lock, items in self._runs(arrays.items()):
            with lock:
                for index, array in items:
                    m.put_tensor(index, name, array, handed=handed)
        if handed:
            hand_over(arrays)  # those the machines copied (not theirs to hold) too

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """Read-only views, as get_tensor's."""
        got = {}
        for m, lock, items in self._runs((ipu, ipu) for ipu in ipus):
            with lock:
                for index, ipu in items:
                    got[ipu] = m.view_tensor(index, name)
        return got

    def _runs(self, pairs: Iterable[tuple[int, object]]):
        """(machine, its lock, [(IPU inside it, value), ...]) for each run of `pairs` (IPU, value) on one machine,
        in order: a call per IPU, a lock per machine it moves to."""
        runs: list[tuple[Machine, threading.Lock, list]] = []
        for ipu, value in pairs:
            m, lock, index = self._at(ipu)
            if not runs or runs[-1][0] is not m:
                runs.append((m, lock, []))
            runs[-1][2].append((index, value))
        return runs

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        got = self.get_tensors(name, ipus)
        return lambda: got

    # --- Streaming Memory, reserved and held SRAM --------------------------------------------------------------
    def offload(self, name: str, ipus: Sequence[int]) -> None:
        for machine, local in self._by_machine(ipus).items():
            m, lock = self.machines[machine]
            with lock:
                m.offload_batch(local, name)

    def load(self, name: str, ipus: Sequence[int]) -> None:
        for machine, local in self._by_machine(ipus).items():
            m, lock = self.machines[machine]
            with lock:
                m.load_batch(local, name)

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        for ipu, array in arrays.items():
            m, lock, index = self._at(ipu)
            with lock:
                m.put_offloaded(index, name, array)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        for ipu, nbytes in sizes.items():
            m, lock, index = self._at(ipu)
            with lock:
                m.reserve(index, name, int(nbytes))

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        machines: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
        for ipu, (sram, streaming) in held.items():
            _, _, index = self._at(ipu)
            machines[ipu // self.ipus_per_machine][index] = (int(sram), int(streaming))
        for machine, mine in sorted(machines.items()):
            m, lock = self.machines[machine]
            with lock:
                m.hold(name, mine)

    # --- what the collectives need -----------------------------------------------------------------------------
    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        m, lock, index = self._at(ipu)
        with lock:
            data = m.memory(index).tensor(name).data
        return int(data.size), data.dtype

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        """Under the locks of the machines taking part, each IPU's tensor is looked up once (the machine's own
        checks: a failed IPU, a missing tensor), then the steps move the data in place as LocalTransport does (they
        are hazard-free, transport.py); a transfer over a failed IPU-Link, or outside a tensor, is refused as the
        machine's own add and set refuse it, before anything moves. The same steps on tensors of the same sizes (a
        training loop's, known_schedules.py) have their IPUs listed and their ranges checked once."""
        kept = self._steps.get(steps)
        if kept is None:
            ipus = sorted({ipu for transfers in steps for t in transfers for ipu in (t.src, t.dst)})
            machines = sorted({ipu // self.ipus_per_machine for ipu in ipus})
            written = {t.dst for transfers in steps for t in transfers}
            kept = self._steps.put(steps, ({ipu: self._at(ipu) for ipu in ipus},
                                           [self.machines[machine][1] for machine in machines], set(), written))
        at, locks, sizes_checked, written = kept  # each IPU's (machine, lock, number in it); the machines' locks
        with ExitStack() as locked:
            for lock in locks:
                locked.enter_context(lock)
            tensors = {ipu: m.memory(index).tensor(name) for ipu, (m, _, index) in at.items()}
            # the IPUs written to, their tensors copied first where a reader holds a view of them (Tensor.writable)
            flats = {ipu: tensor.writable() if ipu in written else tensor.flat for ipu, tensor in tensors.items()}
            sizes = tuple(flat.size for flat in flats.values())
            if sizes not in sizes_checked:
                _check_ranges(name, steps, flats)
                sizes_checked.add(sizes)
            if any(m.failed_links for m, _, _ in at.values()):
                for transfers in steps:
                    for t in transfers:
                        m, _, index = at[t.dst]
                        m.check_received(index, t.src)
            for transfers in steps:
                for t in transfers:
                    src, dst = flats[t.src], flats[t.dst]
                    for a, b in t.ranges:
                        if t.reduce:
                            dst[a:b] += src[a:b]  # local + incoming, as the machine's add_slice does
                        else:
                            dst[a:b] = src[a:b]

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        """Each machine's counters get its IPUs' bytes and the virtual time, as RayTransport.record gives the
        actors; the fleet's counters (if any) get every IPU's. A result recorded again (a known schedule's, every
        step) is split per machine once."""
        split = self._split.get(result)
        if split is None:
            split = self._split.put(result, by_machine(result.traffic, self.ipus_per_machine))
        for machine, kinds in split.items():
            if machine in self.machines:
                m, lock = self.machines[machine]
                with lock:
                    for kind, (sent, received) in kinds.items():
                        m.record_traffic(kind, sent, received, result.virtual_s, times)
        if self.counters is not None:
            self.counters.add(result.traffic, times)

    # --- what a step cost the machines -------------------------------------------------------------------------
    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        for machine in sorted(per_machine):
            m, lock = self.machines[machine]
            with lock:
                m.settle_streaming(*map(int, per_machine[machine]))

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        for machine, step in sorted(steps.items()):
            m, lock = self.machines[machine]
            with lock:
                m.run_step(step)


def _check_ranges(name: str, steps: Sequence[Sequence[Transfer]], flats: Mapping[int, np.ndarray]) -> None:
    """Every range of every transfer inside both its IPUs' tensors, as the machine's add and set check them."""
    for transfers in steps:
        for t in transfers:
            src, dst = flats[t.src], flats[t.dst]
            for a, b in t.ranges:
                if not 0 <= a <= b <= min(src.size, dst.size):
                    raise InvalidArgument(f"tensor {name!r}: element range [{a}, {b}) is outside IPU {t.src}'s"
                                          f" [0, {src.size}) or IPU {t.dst}'s [0, {dst.size})")
