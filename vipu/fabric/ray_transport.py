"""RayTransport: a collective's steps run on the machine actors (vipu.workers.actor.MachineActor).

A machine holds IPUs 4m..4m+3. Calls are batched per machine, never per transfer or per IPU (actor_calls.py): a
put, a get, a step of a collective is one call to each machine it touches, and, deferred, everything a collective
does on one machine (its put, its steps inside the machine, its traffic, its get) is one call there and one wait.
A step across machines is one read_transfers() on each sending machine whose ObjectRef goes straight into an
exchange() on each receiving machine: Ray resolves it actor to actor through its shared-memory object store (numpy
arrays arrive as zero-copy views), never through this process. The schedule guarantees no IPU reads what another
transfer of the same step writes (transfer_schedule.check_hazards), so the order in which machines run a step's
calls does not matter, and the steps follow one another without this process waiting between them.

Deferred (a training run's transport, runs.py): puts, a collective's steps and its record, moves to and from
Streaming Memory, holds, the step's charges and reads ahead (get_tensors_later) are queued or submitted without
waiting; the next call that returns data or reserves or frees waits for them as well, and raises the first error
among them, in submission order. A pipeline tick's sends and receives so cost one call per machine and one wait.
Not deferred (a program's session): every call waits for itself.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Mapping, Sequence

import numpy as np
from ray import ObjectRef
from ray.actor import ActorHandle

from vipu.errors import NotFound, VipuError
from vipu.fabric.actor_calls import ActorCalls
from vipu.fabric.group import Group
from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.traffic import by_machine
from vipu.fabric.transfer_schedule import Transfer
from vipu.fabric.transport import by_machine_index, hand_over, held_by_machine, twin

if TYPE_CHECKING:
    from vipu.workers import bsp


class RayTransport:
    """The Transport protocol (transport.py says what each method does) on the actors of the group's machines."""

    def __init__(self, actors: Mapping[int, ActorHandle], ipus_per_machine: int, timeout_s: float | None = 600.0,
                 *, deferred: bool = False, lost: Callable[[], Collection[int]] = frozenset):
        self.ipus_per_machine = ipus_per_machine
        self.timeout_s = timeout_s
        self.calls = ActorCalls(actors, timeout_s, deferred, lost)
        self.specs: dict[tuple[int, str], tuple[int, np.dtype]] = {}

    @classmethod
    def for_group(cls, pool, group: Group, timeout_s: float | None = 600.0, *, deferred: bool = False) -> RayTransport:
        """The actors of the group's machines from a vipu.workers.pool.MachinePool (started if missing); a wait ends
        once the pool's controller finds one of them lost (actor_calls.py)."""
        return cls(pool.actors_for(group.machines()), group.topology.ipus_per_machine, timeout_s, deferred=deferred,
                   lost=pool.lost)

    @property
    def actors(self) -> dict[int, ActorHandle]:
        return self.calls.actors

    @property
    def deferred(self) -> bool:
        return self.calls.deferred

    @property
    def pending(self) -> bool:
        """Whether calls are queued or submitted and not yet awaited."""
        return bool(self.calls.pending or self.calls.queued)

    def _machine(self, ipu: int) -> tuple[int, int]:
        machine, index = divmod(ipu, self.ipus_per_machine)
        if machine not in self.calls.actors:
            raise NotFound(f"IPU {ipu} is on machine {machine}, which this transport has no actor for; build it"
                           " for the group's machines")
        return machine, index

    def _at(self, ipu: int) -> tuple[ActorHandle, int]:
        """The IPU's machine actor, for a call submitted now, and the IPU's index inside the machine."""
        machine, index = self._machine(ipu)
        return self.calls.actor(machine), index

    def _by_machine(self, ipus: Sequence[int]) -> dict[int, list[int]]:
        for ipu in ipus:
            self._machine(ipu)  # a machine it has an actor for
        return by_machine_index(ipus, self.ipus_per_machine)

    def _later(self, method: str, per_machine: Mapping[int, tuple]) -> None:
        """actor.method(*args) on each machine, a call whose result nobody reads: deferred, queued for the next
        wait; else awaited now."""
        for m, args in per_machine.items():
            self.calls.queue(m, method, *args)
        if not self.calls.deferred:
            self.calls.wait([])

    def _each(self, method: str, per_machine: Mapping[int, tuple]) -> list:
        """actor.method(*args) on each machine, awaited (after everything deferred): the results in order."""
        refs = [getattr(self.calls.actor(m), method).remote(*args) for m, args in per_machine.items()]
        return self.calls.wait(refs)

    # --- the actor's tensor methods, by Pod-wide IPU number ----------------------------------------------------
    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        actor, index = self._at(ipu)
        self.calls.wait([actor.put_tensor.remote(index, name, array, tiles)])
        self.specs[(ipu, name)] = (int(np.size(array)), np.asarray(array).dtype)

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        """One call per machine (deferred: queued, with a copy of each array unless handed: the batch goes at the
        next wait, and the caller may change its arrays meanwhile). An array with the same dtype and bits as
        another IPU's of the same machine goes as that one, and travels once (pickle sends an object once per
        call): the replicas' weights and optimiser state after a data-parallel update. The machine copies it onto
        each IPU."""
        if handed:
            hand_over(arrays)
        machines: dict[int, dict[int, np.ndarray]] = defaultdict(dict)
        for ipu, array in arrays.items():
            machine, index = self._machine(ipu)
            array = np.asarray(array)
            mine = machines[machine]
            mine[index] = next((kept for kept in mine.values() if twin(kept, array)), None)
            if mine[index] is None:
                mine[index] = np.array(array) if self.calls.deferred and not handed else array
            self.specs[(ipu, name)] = (int(array.size), array.dtype)
        for machine, mine in machines.items():
            self.calls.queue(machine, "put_tensors", name, mine)
        if not self.calls.deferred:
            self.calls.wait([])

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self.get_tensors(name, [ipu])[ipu]

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """One call per machine: deferred, in its queued batch, with one wait for everything."""
        return self.get_tensors_later(name, ipus)()

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        """Deferred: each machine's read is queued in its batch, which the next wait sends and awaits (a call of
        the result waits only if none has); the calls queued after it run after it, so it reads the tensors as
        they are now."""
        machines = self._by_machine(ipus)
        if not self.calls.deferred:
            got = self._each("get_tensors", {m: (name, local) for m, local in machines.items()})
            return lambda: self._by_ipu(ipus, machines, got)
        reads = [self.calls.read(m, "get_tensors", name, local) for m, local in machines.items()]
        out: list[dict[int, np.ndarray]] = []  # the result, once read: it may be asked for again

        def result() -> dict[int, np.ndarray]:
            if not out:
                got = [batch[place] for batch, (_, place) in zip(self.calls.results([b for b, _ in reads]), reads)]
                out.append(self._by_ipu(ipus, machines, got))
            return out[0]

        return result

    def _by_ipu(self, ipus: Sequence[int], machines: dict[int, list[int]], got: list) -> dict[int, np.ndarray]:
        """Each IPU's array, its own: an array a machine sent once for several IPUs (MachineActor.get_tensors) is
        copied for each after the first, as the caller may change them in place."""
        out = {}
        for (m, local), arrays in zip(machines.items(), got):
            seen: set[int] = set()
            for index, array in zip(local, arrays):
                out[m * self.ipus_per_machine + index] = array.copy() if id(array) in seen else array
                seen.add(id(array))
        return {ipu: out[ipu] for ipu in ipus}

    def free_tensor(self, ipu: int, name: str) -> None:
        actor, index = self._at(ipu)
        self.calls.wait([actor.free_tensor.remote(index, name)])
        self.specs.pop((ipu, name), None)

    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        """One call per machine, awaited; a machine that is gone has nothing left to free."""
        held = list(held)
        machines = held_by_machine(held, self.ipus_per_machine)
        refs = [self.calls.actor(m).free_each.remote(items) for m, items in machines.items() if m in self.actors]
        try:
            self.calls.wait(refs)
        except VipuError:
            pass
        for ipu, name in held:
            self.specs.pop((ipu, name), None)

    # --- Streaming Memory, reserved and held SRAM (training jobs) ----------------------------------------------
    def offload(self, name: str, ipus: Sequence[int]) -> None:
        """One call per machine (offload_batch), uncharged: record_streaming charges the step's batch."""
        self._later("offload_batch", {m: (local, name) for m, local in self._by_machine(ipus).items()})

    def load(self, name: str, ipus: Sequence[int]) -> None:
        self._later("load_batch", {m: (local, name) for m, local in self._by_machine(ipus).items()})

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        refs = []
        for ipu, array in arrays.items():
            actor, index = self._at(ipu)
            refs.append(actor.put_offloaded.remote(index, name, array))
            self.specs.pop((ipu, name), None)
        self.calls.wait(refs)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        """Awaited (a reservation over SRAM fails here), deferred in the machines' batches: a trainer's reservation
        goes with its weights, one call per machine."""
        for ipu, nbytes in sizes.items():
            machine, index = self._machine(ipu)
            self.calls.queue(machine, "reserve", index, name, int(nbytes))
        self.calls.wait([])

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        machines: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
        for ipu, (sram, streaming) in held.items():
            machine, index = self._machine(ipu)
            machines[machine][index] = (int(sram), int(streaming))
        self._later("hold", {m: (name, mine) for m, mine in sorted(machines.items())})

    # --- what the collectives need -----------------------------------------------------------------------------
    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        """Known when the tensor was put through this transport; otherwise read once from the machine."""
        if (ipu, name) not in self.specs:
            array = self.get_tensor(ipu, name)
            self.specs[(ipu, name)] = (int(array.size), array.dtype)
        return self.specs[(ipu, name)]

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        """Step after step without waiting (module docstring): consecutive steps inside one machine as one exchange()
        there (deferred: queued); a step across machines as one read_transfers() per sending machine and one
        exchange() per receiving machine, which takes the readers' results as they are (ObjectRefs)."""
        run: list = []  # consecutive steps inside machine `home`, sent as one exchange()
        home = None
        for transfers in steps:
            machines = {ipu // self.ipus_per_machine for t in transfers for ipu in (t.src, t.dst)}
            if run and machines != {home}:
                self.calls.queue(home, "exchange", name, run)
                run, home = [], None
            if len(machines) == 1:
                home = next(iter(machines))
                run.append(([(t.src, t.dst, t.ranges, t.reduce) for t in transfers], []))
            else:
                self.calls.submitted(self._across(name, transfers))
        if run:
            self.calls.queue(home, "exchange", name, run)
        if not self.calls.deferred:
            self.calls.wait([])

    def _across(self, name: str, transfers: Sequence[Transfer]) -> list[ObjectRef]:
        """One step across machines: each sending machine reads what it sends to others in one call, each receiving
        machine runs its own transfers and writes what it receives in one call."""
        per = self.ipus_per_machine
        reads: dict[int, list] = defaultdict(list)  # sending machine -> (IPU, ranges) it reads for others
        local: dict[int, list] = defaultdict(list)
        incoming: dict[int, list] = defaultdict(list)  # receiving machine -> (transfer, sending machine, item)
        for t in transfers:
            src, dst = self._machine(t.src)[0], self._machine(t.dst)[0]
            if src == dst:
                local[dst].append((t.src, t.dst, t.ranges, t.reduce))
            else:
                incoming[dst].append((t, src, len(reads[src])))
                reads[src].append((t.src, t.ranges))
        packs = {m: self.calls.actor(m).read_transfers.remote(name, mine) for m, mine in reads.items()}
        refs = list(packs.values())
        for dst in sorted(set(local) | set(incoming)):
            senders = sorted({src for _, src, _ in incoming[dst]})
            order = {src: k for k, src in enumerate(senders)}
            writes = [(t.dst, t.ranges, t.reduce, t.src, order[src], item) for t, src, item in incoming[dst]]
            refs.append(self.calls.actor(dst).exchange.remote(name, [(local[dst], writes)],
                                                              *[packs[m] for m in senders]))
        return refs

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        """Each machine's counters get its IPUs' bytes sent and received per link type (traffic.by_machine, as
        LocalTransport's counters sum them), and the virtual time (deferred: queued with the collective)."""
        self._later("record_traffic_each", {
            m: ([(kind, sent, received, result.virtual_s, times) for kind, (sent, received) in kinds.items()],)
            for m, kinds in by_machine(result.traffic, self.ipus_per_machine).items()})

    # --- what a training step cost the machines ----------------------------------------------------------------
    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        """Each machine charges its (bytes in, bytes out) as one batch (Machine.settle_streaming)."""
        self._later("settle_streaming", {m: tuple(map(int, per_machine[m])) for m in sorted(per_machine)})

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        """Each machine runs its step on its BSP counters (Machine.run_step); deferred, queued for the next wait."""
        self._later("run_step", {m: (step,) for m, step in sorted(steps.items())})
