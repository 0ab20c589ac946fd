"""RayTransport: a collective's steps run on the machine actors (vipu.workers.actor.MachineActor).

A machine holds IPUs 4m..4m+3 and its methods take the IPU's index inside the machine. Each transfer of a step is
one get_slice on the sender's machine whose ObjectRef goes straight into accumulate_slice / set_slice on the
receiver's machine: Ray resolves it actor to actor through the object store, never through this process. A step's
calls are submitted together and awaited with one ray.get, so every step is one synchronous round; the schedule
guarantees no IPU reads what another transfer of the same step writes (transfer_schedule.check_hazards), so the
order in which actors run a step's calls does not matter.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import ray
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

    def __init__(self, actors: Mapping[int, ActorHandle], ipus_per_machine: int, timeout_s: float | None = 600.0):
        self.actors = dict(actors)
        self.ipus_per_machine = ipus_per_machine
        self.timeout_s = timeout_s
        self.specs: dict[tuple[int, str], tuple[int, np.dtype]] = {}

    @classmethod
    def for_group(cls, pool, group: Group, timeout_s: float | None = 600.0) -> RayTransport:
        """The actors of the group's machines from a vipu.workers.pool.MachinePool (started if missing)."""
        return cls(pool.actors_for(group.machines()), group.topology.ipus_per_machine, timeout_s)

    def _at(self, ipu: int) -> tuple[ActorHandle, int]:
        machine, index = divmod(ipu, self.ipus_per_machine)
        try:
            return self.actors[machine], index
        except KeyError:
            raise NotFound(f"IPU {ipu} is on machine {machine}, which this transport has no actor for; build it"
                           " for the group's machines") from None

    def _get(self, refs):
        """ray.get, with the machines' own errors (a failed IPU, a missing tensor) raised as themselves and a lost
        or silent machine as MachineLost (an Unavailable): half a collective has then run, so the tensors must be put again."""
        try:
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
        """Put one array per IPU with one round trip for all of them."""
        refs = []
        for ipu, array in arrays.items():
            actor, index = self._at(ipu)
            refs.append(actor.put_tensor.remote(index, name, array))
            self.specs[(ipu, name)] = (int(np.size(array)), np.asarray(array).dtype)
        self._get(refs)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        actor, index = self._at(ipu)
        return self._get(actor.get_tensor.remote(index, name))

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        refs = [self._at(ipu)[0].get_tensor.remote(self._at(ipu)[1], name) for ipu in ipus]
        return dict(zip(ipus, self._get(refs)))

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

    def run_step(self, name: str, transfers: Sequence[Transfer]) -> None:
        writes = []
        for t in transfers:
            src, src_index = self._at(t.src)
            dst, dst_index = self._at(t.dst)
            write = dst.accumulate_slice if t.reduce else dst.set_slice
            for start, stop in t.ranges:
                values = src.get_slice.remote(src_index, name, start, stop)
                writes.append(write.remote(dst_index, name, start, stop, values, t.src))  # not over a failed link
        self._get(writes)

    def record(self, result: CollectiveResult) -> None:
        """Each machine's counters get its IPUs' bytes sent and received per link type (traffic.by_machine, as
        LocalTransport's counters sum them), and the virtual time."""
        per_machine = by_machine(result.traffic, self.ipus_per_machine)
        refs = [self.actors[m].record_traffic.remote(kind, sent, received, result.virtual_s)
                for m, kinds in per_machine.items() for kind, (sent, received) in kinds.items()]
        self._get(refs)

    # --- what a training step cost the machines ----------------------------------------------------------------
    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        """Each machine charges its (bytes in, bytes out) as one batch (Machine.settle_streaming)."""
        self._get([self.actors[m].settle_streaming.remote(*map(int, per_machine[m])) for m in sorted(per_machine)])

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        """Each machine runs its step on its BSP counters (Machine.run_step). Awaited with a plain ray.get, as the
        trainer awaited it before this was a transport method: a machine lost here raises Ray's error, not
        MachineLost (unlike every other call here)."""
        ray.get([self.actors[m].run_step.remote(step) for m, step in sorted(steps.items())], timeout=self.timeout_s)
