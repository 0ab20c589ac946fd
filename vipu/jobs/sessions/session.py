"""DeviceSession: one run of a user's program on its partition's emulated IPUs, as the controller holds it.

What a program does through it (each a DeviceService call, vipu.sdk's Device over them): place a tensor on an IPU
in tile SRAM or in Streaming Memory, read it back, free it, move it to and from Streaming Memory, reserve SRAM; run a
compute set; run a collective (allreduce, reduce-scatter, all-gather, broadcast) on groups of the partition's IPUs;
send a stage's tensor to the next stage's IPUs and receive it there; and report a step. IPUs are the partition's,
numbered 0..size-1 (the Pod's numbers are first_ipu + i).

How: tensors live on the machines (the transport the session is given: the machine actors, or in-process machines
with --ray off), their names scoped to the run ("job7.run1/w"), so runs on the same machines never see each other's;
collectives and sends (exchanges.py) run the engine's schedules on the fabric and move the real data; every
operation is charged on the IPUs' clocks (ipu_clocks.py) with the engine's cost model. One operation at a time
touches the transport and the clocks (a lock); a collective's members from several instances meet first
(rendezvous.py), and the one that completes the meeting runs it. Refusals name the IPU as the program knows it, the bytes asked and the bytes free.
The tensors' bytes are also counted against the controller's host memory for them (tensor_memory.py), which the
registry gives each session it opens.
"""

from __future__ import annotations

import math
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from vipu.errors import FailedPrecondition, InvalidArgument, NotFound, VipuError
from vipu.fabric import Group
from vipu.fabric.transport import Transport
from vipu.hardware.streaming_cost import duplex_s
from vipu.hardware.topology import Topology
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.sessions.exchanges import TIMEOUT_S, Exchanges
from vipu.jobs.sessions.ipu_clocks import IpuClocks
from vipu.jobs.sessions.rendezvous import Rendezvous
from vipu.jobs.sessions.step_report import step_report
from vipu.jobs.sessions.tensor_memory import TensorMemory
from vipu.jobs.train.data_path import Scoped, free_each
from vipu.jobs.train.machine_charges import charge_compute
from vipu.jobs.train.results import StepReport
from vipu.jobs.train.work import compute_set_times

MEMORIES = ("sram", "streaming")
DTYPES = ("fp16", "fp32")
STEPS_KEPT = 10_000  # the last steps a run keeps (a program reporting millions must not grow the controller)
FREE_WAIT_S = 60.0  # how long a new session waits for an earlier one on its IPUs to free its tensors
_LABEL = re.compile(r"IPU (\d+) \(IPU (\d+) of machine (\d+)\)")


@dataclass(frozen=True)
class Instance:
    """One instance of the program, as it attached (PopDist's view of it)."""

    index: int
    count: int
    ipus_per_replica: int


class DeviceSession(Exchanges):
    def __init__(self, *, job_id: int, run: int, partition: str, first_ipu: int, size: int, pod,
                 transport: Callable[[], Transport], clock: Callable[[], float] = time.perf_counter):
        self.job_id, self.run, self.partition, self.pod = job_id, run, partition, pod
        self.first, self.size = first_ipu, size
        self.scope = f"job{job_id}.run{run}/"  # its tensors' names on the machines start with this (data_path.Scoped)
        self.topology = Topology(pod)
        self.group = Group.block(self.topology, first_ipu, size)
        self.efficiency = DEFAULT.compute_efficiency  # the engine's and the planner's figures (assumptions.py)
        self.sync_s = DEFAULT.sync_s(pod, size)
        self._make_transport, self._transport = transport, None
        self._lock = threading.RLock()
        self._arrived = threading.Condition(self._lock)  # a send's data is there to receive
        self.rendezvous = Rendezvous()
        self.clocks = IpuClocks(self.group.ipus)
        self._held: dict[tuple[int, str], tuple[str, int]] = {}  # (Pod IPU, name) -> (sram|reserved|streaming, bytes)
        self.memory: TensorMemory | None = None  # the controller's, once open (tokens.py)
        self._host = 0  # bytes of data it holds (all but reserved), as counted in `memory`
        self._taken = 0  # bytes the operation under way took from `memory` (_room)
        self._peak: dict[int, tuple[int, int, int]] = {}  # Pod IPU -> (SRAM, of it reserved, Streaming) this step
        self._log: list = []  # (kind, CollectiveResult) of the step's collectives and sends
        self._mail: dict[tuple, tuple[float, str, tuple[int, ...]]] = {}  # sent, not yet received
        self.reports: list[StepReport] = []  # the last STEPS_KEPT steps
        self.steps_reported = 0
        self.instances: dict[int, Instance] = {}
        self._closed: str | None = None
        self.freed = threading.Event()  # every tensor it put has been freed (after close)
        self.after: list[DeviceSession] = []  # earlier sessions on its IPUs still freeing theirs (tokens.py)
        self._clock = clock
        self._last_report = clock()

    # --- who and where ----------------------------------------------------------------------------------------
    def overlaps(self, other: DeviceSession) -> bool:
        return self.first < other.first + other.size and other.first < self.first + self.size

    def _ipu(self, ipu: int) -> int:
        """The Pod's number of the partition's IPU `ipu`."""
        if isinstance(ipu, bool) or not isinstance(ipu, (int, np.integer)) or not 0 <= ipu < self.size:
            raise InvalidArgument(f"IPU {ipu!r} is not one of partition {self.partition}'s; give 0 to {self.size - 1}")
        return self.first + int(ipu)

    @property
    def ipus_per_replica(self) -> int:
        """As the instances attached (1 before any has): what tells a replica's collectives from ones across them."""
        return next(iter(self.instances.values())).ipus_per_replica if self.instances else 1

    def _replica(self, pod_ipu: int) -> int:
        return (pod_ipu - self.first) // self.ipus_per_replica

    def _say(self, message: str) -> str:
        """A machine's message as the program reads it: its tensor names unscoped, IPUs by the partition's number."""
        def label(m: re.Match) -> str:
            ipu = int(m.group(1))
            if not self.first <= ipu < self.first + self.size:
                return m.group(0)
            return (f"IPU {ipu - self.first} of partition {self.partition} (Pod IPU {ipu}, IPU {m.group(2)} of"
                    f" machine {m.group(3)})")
        return _LABEL.sub(label, message.replace(self.scope, ""))

    @contextmanager
    def _op(self):
        """One operation: alone on the transport and the clocks, in a session still open, errors in its words."""
        with self._lock:
            if self._closed is not None:
                raise FailedPrecondition(self._closed)
            host, taken = self._host, self._taken
            try:
                yield
            except VipuError as e:
                raise type(e)(self._say(e.message), reason=e.reason, metadata=e.metadata) from None
            finally:  # what it took from the tensor memory, settled to what it really added (or freed)
                took, self._taken = self._taken - taken, taken
                if self.memory is not None:
                    self.memory.give(took - (self._host - host))

    def _room(self, nbytes: int, what: str) -> None:
        """Take `nbytes` more from the controller's tensor memory for the operation under way, before it stores
        them; ResourceExhausted if they do not fit."""
        if self.memory is not None and nbytes > 0:
            self.memory.take(nbytes, what, self._host)
            self._taken += nbytes

    def _data_bytes(self, keys) -> int:
        """Of the tensors (Pod IPU, name) `keys`, the bytes of data held now (what a put over them replaces)."""
        return sum(n for where, n in (self._held.get(key, ("", 0)) for key in keys) if where != "reserved")

    def _machines(self) -> Transport:
        """The transport, made at first use (it may bring up machine actors) once earlier sessions on these IPUs
        have freed their tensors (a cancelled run's program may be ending beside the next run's)."""
        if self._transport is None:
            for earlier in self.after:
                earlier.freed.wait(FREE_WAIT_S)
            self._transport = Scoped(self._make_transport(), self.scope)
        return self._transport

    # --- what the program holds ---------------------------------------------------------------------------------
    def _placed(self, ipu: int, name: str, where: str, nbytes: int) -> None:
        self._dropped(ipu, name)
        self._held[(ipu, name)] = (where, int(nbytes))
        self._host += int(nbytes) if where != "reserved" else 0
        sram, reserved, streaming = self._holding(ipu)
        peak = self._peak.get(ipu, (0, 0, 0))
        self._peak[ipu] = (max(peak[0], sram), reserved if sram >= peak[0] else peak[1], max(peak[2], streaming))

    def _dropped(self, ipu: int, name: str) -> None:
        where, nbytes = self._held.pop((ipu, name), ("reserved", 0))
        self._host -= nbytes if where != "reserved" else 0

    def _holding(self, ipu: int) -> tuple[int, int, int]:
        mine = [where_bytes for (i, _), where_bytes in self._held.items() if i == ipu]
        return (sum(n for where, n in mine if where != "streaming"), sum(n for where, n in mine if where == "reserved"),
                sum(n for where, n in mine if where == "streaming"))

    def _names(self, name: str, ipus: Sequence[int]) -> list[int]:
        if not isinstance(name, str) or not name or len(name) > 256:
            raise InvalidArgument(f"tensor name {name!r}: give a name of 1 to 256 characters")
        if not ipus:
            raise InvalidArgument(f"tensor {name!r}: no IPU given; name at least one of the partition's IPUs")
        return [self._ipu(ipu) for ipu in ipus]

    # --- operations ---------------------------------------------------------------------------------------------
    def attach(self, index: int, count: int, ipus_per_replica: int) -> dict:
        """One instance of the program joins (PopDist's getInstanceIndex / getNumInstances /
        getNumIpusPerReplica); every instance must agree on the count and the replica size."""
        if count < 1 or not 0 <= index < count:
            raise InvalidArgument(f"instance {index} of {count}: give 0 <= instance index < instances (PopDist's"
                                  " POPDIST_* variables, or none for one instance)")
        if ipus_per_replica < 1 or self.size % ipus_per_replica or (self.size // ipus_per_replica) % count:
            raise InvalidArgument(
                f"{ipus_per_replica} IPUs per replica in {count} instance{'s' if count > 1 else ''}: partition"
                f" {self.partition} has {self.size} IPUs, which must be replicas x IPUs per replica with the replicas"
                " divided evenly between the instances; give an IPUs-per-replica count that does that")
        with self._op():
            known = next(iter(self.instances.values()), None)
            if known is not None and (known.count, known.ipus_per_replica) != (count, ipus_per_replica):
                raise FailedPrecondition(
                    f"instance {index} says {count} instances of {ipus_per_replica}-IPU replicas, instance"
                    f" {known.index} said {known.count} of {known.ipus_per_replica}: every instance of a run must"
                    " agree (they read the same POPDIST_* variables)")
            self.instances[index] = Instance(index, count, ipus_per_replica)
            self._machines()
        ipu, machine = self.pod.ipu, self.pod.machine
        return {"partition": self.partition, "size": self.size, "first_ipu": self.first, "pod": self.pod.name,
                "ipus_per_machine": machine.ipus, "tiles_per_ipu": ipu.tiles,
                "sram_bytes_per_ipu": ipu.tiles * ipu.sram_per_tile_bytes,
                "streaming_memory_bytes_per_machine": int(machine.streaming_memory_bytes), "job_id": self.job_id,
                "run": self.run}

    def put(self, name: str, arrays: Mapping[int, np.ndarray], memory: str = "sram") -> None:
        """Place arrays[ipu] on each IPU under `name` (replacing a tensor of that name), in its tile SRAM or
        straight in its machine's Streaming Memory. Host I/O: no virtual time."""
        if memory not in MEMORIES:
            raise InvalidArgument(f"memory is {memory!r}; give sram or streaming")
        ipus = self._names(name, list(arrays))
        arrays = {ipu: np.asarray(array) for ipu, array in zip(ipus, arrays.values())}
        with self._op():
            self._room(sum(a.nbytes for a in arrays.values()) - self._data_bytes((ipu, name) for ipu in ipus),
                       f"put {name!r}")
            machines = self._machines()
            for ipu, array in arrays.items():
                if self._held.get((ipu, name), ("", 0))[0] not in ("", memory):
                    machines.free_tensor(ipu, name)  # the tensor of that name in the other memory goes
                    self._dropped(ipu, name)
                if memory == "sram":
                    machines.put_tensor(ipu, name, array)
                else:
                    machines.put_offloaded(name, {ipu: array})
                self._placed(ipu, name, memory, array.nbytes)

    def get(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """A copy of `name` from each IPU's SRAM (load it first if it is in Streaming Memory)."""
        pod = self._names(name, ipus)
        with self._op():
            got = self._machines().get_tensors(name, pod)
        return {ipu: got[p] for ipu, p in zip(ipus, pod)}

    def free(self, name: str, ipus: Sequence[int]) -> None:
        pod = self._names(name, ipus)
        with self._op():
            for ipu in pod:
                self._machines().free_tensor(ipu, name)
                self._dropped(ipu, name)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        """Hold sizes[ipu] bytes of each IPU's SRAM under `name` with no data (a buffer the program keeps on the
        host, e.g. its activations): more than fits is refused as a put is."""
        pod = self._names(name, list(sizes))
        if any(not isinstance(n, (int, np.integer)) or n < 0 for n in sizes.values()):
            raise InvalidArgument(f"reserve {name!r}: give whole bytes, 0 or more, per IPU")
        with self._op():
            for ipu, nbytes in zip(pod, sizes.values()):
                self._machines().reserve(name, {ipu: int(nbytes)})
                self._placed(ipu, name, "reserved", int(nbytes))

    def offload(self, name: str, ipus: Sequence[int]) -> float:
        """Move `name` of each IPU from its SRAM to its machine's Streaming Memory; the IPUs of each machine wait
        for its duplex batch. Returns the longest batch's virtual seconds."""
        return self._stream(name, ipus, "streaming")

    def load(self, name: str, ipus: Sequence[int]) -> float:
        """Move `name` of each IPU back from Streaming Memory onto its tiles, charged as offload()."""
        return self._stream(name, ipus, "sram")

    def _stream(self, name: str, ipus: Sequence[int], to: str) -> float:
        pod = self._names(name, ipus)
        with self._op():
            sizes = {}
            for ipu in pod:
                where, nbytes = self._held.get((ipu, name), ("", 0))
                if where != ("sram" if to == "streaming" else "streaming"):
                    here = "in Streaming Memory" if to == "streaming" else "in SRAM"
                    raise NotFound(f"tensor {name!r} of IPU {ipu - self.first} is not where it would move from"
                                   f" ({'already ' + here if where else 'never put'}); put it first")
                sizes[ipu] = nbytes
            machines = self._machines()
            (machines.offload if to == "streaming" else machines.load)(name, pod)
            for ipu, nbytes in sizes.items():
                self._placed(ipu, name, to, nbytes)
            per_machine: dict[int, list[int]] = {}
            for ipu in pod:
                per_machine.setdefault(ipu // self.pod.machine.ipus, []).append(ipu)
            batches = {m: (0, sum(sizes[i] for i in mine)) if to == "streaming" else (sum(sizes[i] for i in mine), 0)
                       for m, mine in per_machine.items()}
            machines.record_streaming(batches)
            spec = self.pod.machine
            seconds = 0.0
            for m, mine in per_machine.items():
                batch_s = duplex_s(*batches[m], spec.streaming_memory_bytes_per_s, spec.streaming_memory_latency_s)
                self.clocks.streaming(mine, batch_s)
                seconds = max(seconds, batch_s)
        return seconds

    def compute(self, flops: Mapping[int, float], dtype: str = "fp16",
                cycles: Mapping[int, float] | None = None) -> float:
        """A BSP compute set: flops[ipu] FLOPs on each IPU, spread over its tiles at the planner's calibrated
        efficiency, and cycles[ipu] tile cycles of vector work spread over them too; its IPUs wait for one another
        (the sync). Returns its virtual seconds."""
        cycles = dict(cycles or {})
        if dtype not in DTYPES:
            raise InvalidArgument(f"dtype is {dtype!r}; give fp16 or fp32 (the IPU's FLOP rates)")
        if not flops:
            raise InvalidArgument("a compute set of no IPU: give FLOPs for at least one of the partition's IPUs")
        if set(cycles) - set(flops):
            raise InvalidArgument(f"vector_cycles name IPUs {sorted(set(cycles) - set(flops))} the compute set gives"
                                  " no FLOPs for; give each of them FLOPs (0 for none)")
        pod = {ipu: self._ipu(ipu) for ipu in flops}
        if any(not math.isfinite(n) or n < 0 for n in (*flops.values(), *cycles.values())):
            raise InvalidArgument("FLOPs and vector_cycles must be finite and 0 or more on every IPU")
        with self._op():
            times = compute_set_times(self.pod, dtype, {pod[i]: float(n) for i, n in flops.items()}, self.efficiency,
                                      {pod[i]: float(n) for i, n in cycles.items()})
            self.clocks.compute_set(times.step_s, {ipu: phases.compute_s for ipu, phases in times.ipus.items()})
        return times.step_s

    def report_step(self, instance: int, step: int, losses: np.ndarray, timeout_s: float = TIMEOUT_S) -> StepReport:
        """End the step: every instance reports it (with its samples' losses, in its replicas' order), and once
        all have, the step's report is made once: its loss the mean over every instance's losses, its time and
        parts from the clocks, which then all move to the step's end."""
        count = next(iter(self.instances.values())).count if self.instances else 1
        expected = frozenset(("instance", i) for i in range(count))
        return self.rendezvous.meet(("step", int(step)), expected, {("instance", int(instance)): losses},
                                    self._end_step, timeout_s, f"report of step {step}")

    def _end_step(self, contributions: dict) -> StepReport:
        losses = np.concatenate([np.asarray(contributions[k]).reshape(-1) for k in sorted(contributions)])
        if not losses.size or not np.all(np.isfinite(losses)):
            raise InvalidArgument(f"the step's losses {losses.tolist()[:8]} are empty or not finite; report the"
                                  " samples' losses")
        with self._op():
            now = self._clock()
            time_ = self.clocks.end_step()
            held = {ipu: self._peak.get(ipu, self._holding(ipu)) for ipu in self.group.ipus}
            report = step_report(self.steps_reported, float(losses.mean()), time_, self._log, held,
                                 now - self._last_report)
            charge_compute(self._machines(), self.pod, time_.own_compute_s, time_.step_s,
                           f"job {self.job_id} step {self.steps_reported}", "fp32")
            self._last_report = now
            self._log = []
            self._peak = {ipu: self._holding(ipu) for ipu in self.group.ipus}
            self.steps_reported += 1
            self.reports = [*self.reports[-(STEPS_KEPT - 1):], report]
        return report

    # --- its end ------------------------------------------------------------------------------------------------
    def close(self, why: str) -> None:
        """The run has ended: calls waiting now and every later one fail with FailedPrecondition(why). Never waits
        for an operation under way (the controller closes sessions under its lock): free_all() wakes the receives."""
        self._closed = why
        self.rendezvous.close(why)

    def free_all(self) -> None:
        """Free every tensor the run left (best effort: a machine that is gone has nothing left to free)."""
        try:
            with self._lock:
                self._arrived.notify_all()  # receives waiting on a closed session end now
                if self._transport is not None:
                    free_each(self._transport, self._held)
                self._held.clear()
                self._mail.clear()
        finally:
            if self.memory is not None:
                self.memory.give(self._host)
            self._host = 0
            self.freed.set()
