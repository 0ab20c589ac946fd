"""RayTransport: a collective's steps run on the machine actors (vipu.workers.actor.MachineActor).

A machine holds IPUs 4m..4m+3. Calls are batched per machine, never per transfer or per IPU: a put, a get, a step
of a collective is one call to each machine it touches. A step whose transfers stay inside one machine, and a run
of such steps, is one exchange() call there; a step across machines is one read_transfers() on each sending machine
whose ObjectRef goes straight into an exchange() on each receiving machine: Ray resolves it actor to actor through
its shared-memory object store (numpy arrays arrive as zero-copy views), never through this process. The schedule
guarantees no IPU reads what another transfer of the same step writes (transfer_schedule.check_hazards), so the
order in which machines run a step's calls does not matter, and Ray runs one caller's calls to an actor in the
order they were submitted (https://docs.ray.io/en/latest/ray-core/actors/task-orders.html; the actors never retry
a call), so the steps follow one another without this process waiting between them.

Deferred (a training run's transport, runs.py): puts, a collective's steps and its record are submitted without
waiting; the next call that returns data or changes anything else (a get, a reserve, a free...) waits for them as
well, and raises the first error among them, in submission order. A collective is then one round trip: put, steps,
record and get submitted together, awaited once. Not deferred (a program's session): every call waits for itself.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import ray
from ray import ObjectRef
from ray.actor import ActorHandle
from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayTaskError

from vipu.errors import MachineLost, NotFound, VipuError
from vipu.fabric.group import Group
from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.traffic import by_machine
from vipu.fabric.transfer_schedule import Transfer
from vipu.fabric.transport import by_machine_index

if TYPE_CHECKING:
    from vipu.workers import bsp


class RayTransport:
    """The Transport protocol (transport.py says what each method does) on the actors of the group's machines."""

    def __init__(self, actors: Mapping[int, ActorHandle], ipus_per_machine: int, timeout_s: float | None = 600.0,
                 *, deferred: bool = False):
        self.actors = dict(actors)
        self.ipus_per_machine = ipus_per_machine
        self.timeout_s = timeout_s
        self.deferred = deferred
        self.specs: dict[tuple[int, str], tuple[int, np.dtype]] = {}
        self.pending: list[ObjectRef] = []  # submitted, not yet awaited (deferred)
        self.reports: dict[int, list[tuple[str, int, int, float]]] = defaultdict(list)  # traffic not yet sent

    @classmethod
    def for_group(cls, pool, group: Group, timeout_s: float | None = 600.0, *, deferred: bool = False) -> RayTransport:
        """The actors of the group's machines from a vipu.workers.pool.MachinePool (started if missing)."""
        return cls(pool.actors_for(group.machines()), group.topology.ipus_per_machine, timeout_s, deferred=deferred)

    def _at(self, ipu: int) -> tuple[ActorHandle, int]:
        machine, index = divmod(ipu, self.ipus_per_machine)
        try:
            return self.actors[machine], index
        except KeyError:
            raise NotFound(f"IPU {ipu} is on machine {machine}, which this transport has no actor for; build it"
                           " for the group's machines") from None

    def _submitted(self, refs: list[ObjectRef]) -> None:
        """Calls that return nothing: awaited now, or with the next call that waits (deferred)."""
        if self.deferred:
            self.pending.extend(refs)
        else:
            self._get(refs)

    def _flush(self) -> list[ObjectRef]:
        """Every deferred call, the traffic reports included (one call per machine), to be awaited first."""
        for machine, reports in sorted(self.reports.items()):
            self.pending.append(self.actors[machine].record_traffic_each.remote(reports))
        self.reports = defaultdict(list)
        pending, self.pending = self.pending, []
        return pending

    def _get(self, refs):
        """ray.get of `refs` after everything deferred (a list gives a list of its own results), with the machines'
        own errors (a failed IPU, a missing tensor) raised as themselves and a lost or silent machine as MachineLost
        (an Unavailable): half a collective has then run, so the tensors must be put again."""
        pending = self._flush()
        try:
            if isinstance(refs, list):
                return ray.get(pending + refs, timeout=self.timeout_s)[len(pending):]
            if pending:
                ray.get(pending, timeout=self.timeout_s)
            return ray.get(refs, timeout=self.timeout_s)
        except (ActorDiedError, ActorUnavailableError, GetTimeoutError) as e:
            raise MachineLost(f"a machine actor did not complete its part of the collective"
                              f" ({type(e).__name__}: {str(e).splitlines()[0]}); the group's tensors are now partly"
                              " reduced: put them again and rerun the collective once the machine is back") from e
        except RayTaskError as e:
            if isinstance(e.cause, VipuError):
                raise e.cause from None
            raise

    # --- the actor's tensor methods, by Pod-wide IPU number ----------------------------------------------------
    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        actor, index = self._at(ipu)
        self._get(actor.put_tensor.remote(index, name, array, tiles))
        self.specs[(ipu, name)] = (int(np.size(array)), np.asarray(array).dtype)

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        """Put one array per IPU, one call per machine."""
        machines: dict[int, dict[int, np.ndarray]] = defaultdict(dict)
        for ipu, array in arrays.items():
            _, index = self._at(ipu)
            machines[ipu // self.ipus_per_machine][index] = array
            self.specs[(ipu, name)] = (int(np.size(array)), np.asarray(array).dtype)
        self._submitted([self.actors[m].put_tensors.remote(name, mine) for m, mine in machines.items()])

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        actor, index = self._at(ipu)
        return self._get(actor.get_tensor.remote(index, name))

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """One call per machine."""
        machines = self._by_machine(ipus)
        got = self._get([self.actors[m].get_tensors.remote(name, local) for m, local in machines.items()])
        out = {}
        for (m, local), arrays in zip(machines.items(), got):
            out.update({m * self.ipus_per_machine + index: array for index, array in zip(local, arrays)})
        return {ipu: out[ipu] for ipu in ipus}

    def free_tensor(self, ipu: int, name: str) -> None:
        actor, index = self._at(ipu)
        self._get(actor.free_tensor.remote(index, name))
        self.specs.pop((ipu, name), None)

    # --- Streaming Memory, reserved and held SRAM (training jobs) ----------------------------------------------
    def _by_machine(self, ipus: Sequence[int]) -> dict[int, list[int]]:
        for ipu in ipus:
            self._at(ipu)  # a machine it has an actor for
        return by_machine_index(ipus, self.ipus_per_machine)

    def offload(self, name: str, ipus: Sequence[int]) -> None:
        """One call per machine (offload_batch), uncharged: record_streaming charges the step's batch."""
        self._get([self.actors[m].offload_batch.remote(local, name) for m, local in self._by_machine(ipus).items()])

    def load(self, name: str, ipus: Sequence[int]) -> None:
        self._get([self.actors[m].load_batch.remote(local, name) for m, local in self._by_machine(ipus).items()])

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        refs = []
        for ipu, array in arrays.items():
            actor, index = self._at(ipu)
            refs.append(actor.put_offloaded.remote(index, name, array))
            self.specs.pop((ipu, name), None)
        self._get(refs)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        refs = []
        for ipu, nbytes in sizes.items():
            actor, index = self._at(ipu)
            refs.append(actor.reserve.remote(index, name, int(nbytes)))
        self._get(refs)

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        machines: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
        for ipu, (sram, streaming) in held.items():
            _, index = self._at(ipu)
            machines[ipu // self.ipus_per_machine][index] = (int(sram), int(streaming))
        self._get([self.actors[m].hold.remote(name, mine) for m, mine in sorted(machines.items())])

    # --- what the collectives need -----------------------------------------------------------------------------
    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        """Known when the tensor was put through this transport; otherwise read once from the machine."""
        if (ipu, name) not in self.specs:
            array = self.get_tensor(ipu, name)
            self.specs[(ipu, name)] = (int(array.size), array.dtype)
        return self.specs[(ipu, name)]

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        """Submitted step after step without waiting (module docstring): consecutive steps inside one machine as
        one exchange() there; a step across machines as one read_transfers() per sending machine and one
        exchange() per receiving machine, which takes the readers' results as they are (ObjectRefs)."""
        refs: list[ObjectRef] = []
        run: list = []  # consecutive steps inside machine `home`, sent as one exchange()
        home = None
        for transfers in steps:
            machines = {ipu // self.ipus_per_machine for t in transfers for ipu in (t.src, t.dst)}
            if len(machines) == 1 and (home is None or machines == {home}):
                home = machines.pop()
                run.append(([(t.src, t.dst, t.ranges, t.reduce) for t in transfers], []))
                continue
            if run:
                refs.append(self._actor(home).exchange.remote(name, run))
                run, home = [], None
            if len(machines) == 1:
                home = machines.pop()
                run.append(([(t.src, t.dst, t.ranges, t.reduce) for t in transfers], []))
                continue
            refs.extend(self._across(name, transfers))
        if run:
            refs.append(self._actor(home).exchange.remote(name, run))
        self._submitted(refs)

    def _actor(self, machine: int) -> ActorHandle:
        return self._at(machine * self.ipus_per_machine)[0]

    def _across(self, name: str, transfers: Sequence[Transfer]) -> list[ObjectRef]:
        """One step across machines: each sending machine reads what it sends to others in one call, each receiving
        machine runs its own transfers and writes what it receives in one call."""
        per = self.ipus_per_machine
        reads: dict[int, list] = defaultdict(list)  # sending machine -> (IPU, ranges) it reads for others
        local: dict[int, list] = defaultdict(list)
        incoming: dict[int, list] = defaultdict(list)  # receiving machine -> (transfer, sending machine, item)
        for t in transfers:
            src, dst = t.src // per, t.dst // per
            if src == dst:
                local[dst].append((t.src, t.dst, t.ranges, t.reduce))
            else:
                incoming[dst].append((t, src, len(reads[src])))
                reads[src].append((t.src, t.ranges))
        packs = {m: self._actor(m).read_transfers.remote(name, mine) for m, mine in reads.items()}
        refs = list(packs.values())
        for dst in sorted(set(local) | set(incoming)):
            senders = sorted({src for _, src, _ in incoming[dst]})
            order = {src: k for k, src in enumerate(senders)}
            writes = [(t.dst, t.ranges, t.reduce, t.src, order[src], item) for t, src, item in incoming[dst]]
            refs.append(self._actor(dst).exchange.remote(name, [(local[dst], writes)], *[packs[m] for m in senders]))
        return refs

    def record(self, result: CollectiveResult) -> None:
        """Each machine's counters get its IPUs' bytes sent and received per link type (traffic.by_machine, as
        LocalTransport's counters sum them), and the virtual time: sent with the next call that waits, one call per
        machine however many collectives it reports."""
        for m, kinds in by_machine(result.traffic, self.ipus_per_machine).items():
            self._actor(m)
            self.reports[m].extend((kind, sent, received, result.virtual_s) for kind, (sent, received) in kinds.items())
        if not self.deferred:
            self._get([])

    # --- what a training step cost the machines ----------------------------------------------------------------
    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        """Each machine charges its (bytes in, bytes out) as one batch (Machine.settle_streaming)."""
        self._get([self.actors[m].settle_streaming.remote(*map(int, per_machine[m])) for m in sorted(per_machine)])

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        """Each machine runs its step on its BSP counters (Machine.run_step). Awaited with a plain ray.get, as the
        trainer awaited it before this was a transport method: a machine lost here raises Ray's error, not
        MachineLost (unlike every other call here)."""
        self._get([])
        ray.get([self.actors[m].run_step.remote(step) for m, step in sorted(steps.items())], timeout=self.timeout_s)
