"""One Bow-2000 IPU-Machine as plain Python: its IPUs' tile memory, its Streaming Memory, health and counters.

This is everything a machine actor knows, with no Ray in it, so it is tested directly and the actor stays a thin
wrapper. IPUs are addressed either by their number inside the machine (0..3) or by their Pod-wide number
(hardware/topology.py: IPU i is IPU i % 4 of machine i // 4); the two ranges only overlap on machine 0, where they
agree, so callers thinking in partitions and callers thinking in machines both work. Everything the machine reports
(health, stats, step times) uses Pod-wide numbers, and IPU-Links are always pairs of Pod-wide numbers because they
may cross machines.

A failed IPU refuses every operation until repair(); a repaired IPU comes back reset, with empty tile memory, as a
real IPU does after a reset. Streaming Memory is the machine's DRAM and survives IPU failures.

What the machine reports as in use (stats) is what the Pod would hold. For tensors put on it, their bytes. A training
job's IPUs instead report what the job declares each step (hold): its SRAM peak and Streaming Memory as the job
counts them (jobs/train/holdings.py), the figures `vipu logs` shows and a controller without actors reports from
the same steps. The emulation's own buffers differ from the Pod's: fp32 where the model is fp16, a phased stage's
weights whole where the Pod streams in one block at a time, collective scratch the Pod keeps in its exchange
reserve, loaded tensors moved out of Streaming Memory where the Pod keeps its copy. They are still allocated and
checked against capacity, and reported apart (sram_allocated_bytes, streaming allocated_bytes).
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from vipu.by_identity import ByIdentity
from vipu.errors import FailedPrecondition, InvalidArgument, VipuError
from vipu.hardware.figures import LINK_TYPES
from vipu.hardware.pod import PodConfig
from vipu.hardware.topology import Topology
from vipu.workers import bsp
from vipu.workers.streaming_memory import StreamingMemory
from vipu.workers.tile_sram import IpuMemory, Linear

ALL_TILES = Linear(0, None)
STEPS_PRICED = 64  # the distinct steps run kept with their price (a training loop's: one per run)


@dataclass
class LinkCounters:
    sent_bytes: int = 0
    received_bytes: int = 0
    virtual_s: float = 0.0
    reports: int = 0


class Machine:
    def __init__(self, pod: PodConfig, index: int):
        if not 0 <= index < pod.machines:
            raise InvalidArgument(f"machine {index} is not in {pod.name}; machines are 0..{pod.machines - 1}")
        self.pod = pod
        self.index = index
        self.size = pod.machine.ipus
        self.first_ipu = index * self.size
        self.memories = [IpuMemory(pod.ipu.tiles, pod.ipu.sram_per_tile_bytes, self.ipu_label(i))
                         for i in range(self.size)]
        self.streaming = StreamingMemory(pod.machine.streaming_memory_bytes, pod.machine.streaming_memory_bytes_per_s,
                                         pod.machine.streaming_memory_latency_s, f"machine {index}")
        self.held: list[dict[str, tuple[int, int]]] = [{} for _ in range(self.size)]  # per IPU, name -> hold()
        self.failed_ipus: set[int] = set()  # numbers inside the machine
        self.failed_links: set[tuple[int, int]] = set()  # (low, high) Pod-wide IPU numbers
        self.links = {kind: LinkCounters() for kind in LINK_TYPES}
        self.phases = [bsp.PhaseTimes() for _ in range(self.size)]  # per IPU, summed since the machine started
        self.last = [bsp.PhaseTimes() for _ in range(self.size)]  # per IPU, its last step: what utilisation is of
        self.steps = 0
        self._priced: ByIdentity[tuple[bsp.Step, bsp.StepTimes]] = ByIdentity(STEPS_PRICED)  # step -> (Pod-wide, price)

    # --- addressing -------------------------------------------------------------------------------------------
    @property
    def ipus(self) -> list[int]:
        return list(range(self.first_ipu, self.first_ipu + self.size))

    def local(self, ipu: int) -> int:
        """The number inside the machine of `ipu`, given either inside the machine or Pod-wide."""
        if type(ipu) is not int:  # noqa: E721 - a plain int needs no conversion (most calls: a step's many)
            ipu = operator.index(ipu)
        if 0 <= ipu < self.size:
            return ipu
        if self.first_ipu <= ipu < self.first_ipu + self.size:
            return ipu - self.first_ipu
        raise InvalidArgument(
            f"IPU {ipu} is not on machine {self.index}; give 0..{self.size - 1} or its Pod-wide numbers"
            f" {self.first_ipu}..{self.first_ipu + self.size - 1}"
        )

    @cached_property
    def topology(self) -> Topology:
        return Topology(self.pod)

    def ipu_label(self, local: int) -> str:
        return f"IPU {self.first_ipu + local} (IPU {local} of machine {self.index})"

    def memory(self, ipu: int) -> IpuMemory:
        """The tile memory of a working IPU; a failed one raises FailedPrecondition."""
        local = self.local(ipu)
        if local in self.failed_ipus:
            raise FailedPrecondition(f"{self.ipu_label(local)} has failed; repair it or move the work to a working"
                                     " IPU")
        return self.memories[local]

    # --- tensors ----------------------------------------------------------------------------------------------
    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None,
                   handed: bool = False) -> None:
        """Place `array` linearly over the first `tiles` tiles (default all), replacing a tensor of that name: a copy,
        or with `handed` the array itself where it can be held as it is (IpuMemory.allocate), read-only from then."""
        self.memory(ipu).allocate(name, np.asarray(array), ALL_TILES if tiles is None else Linear(0, tiles),
                                  copy=not handed)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self.memory(ipu).read(name)

    def view_tensor(self, ipu: int, name: str) -> np.ndarray:
        """The tensor's values without a copy, read-only and never changed afterwards (IpuMemory.view)."""
        return self.memory(ipu).view(name)

    def get_slice(self, ipu: int, name: str, start: int, stop: int) -> np.ndarray:
        return self.memory(ipu).read_slice(name, start, stop)

    def set_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray,
                  sender: int | None = None) -> None:
        """Write values `sender` (a Pod-wide IPU, when they came from one) sent: not over a failed IPU-Link."""
        self.check_received(ipu, sender)
        self.memory(ipu).write_slice(name, start, stop, values)

    def accumulate_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray,
                         sender: int | None = None) -> None:
        self.check_received(ipu, sender)
        self.memory(ipu).add_slice(name, start, stop, values)

    def read_ranges(self, ipu: int, name: str, ranges) -> np.ndarray:
        """get_slice of each (start, stop) of `ranges`, joined in one flat array: a collective's transfer."""
        return self.memory(ipu).read_ranges(name, ranges)

    def write_ranges(self, ipu: int, name: str, ranges, values: np.ndarray, reduce: bool,
                     sender: int | None = None) -> None:
        """accumulate_slice (reduce) or set_slice of each range in turn from the flat `values` `sender` sent."""
        self.check_received(ipu, sender)
        self.memory(ipu).write_ranges(name, ranges, values, reduce)

    def check_received(self, ipu: int, sender: int | None) -> None:
        """A collective's transfer between IPU-Link neighbours crosses that link, which must not have failed (the
        IPUs of a failed link stay usable: only the link is gone, as for a BSP exchange, _check_sends)."""
        if sender is None:
            return
        link = tuple(sorted((operator.index(sender), self.first_ipu + self.local(ipu))))
        if link in self.failed_links:
            raise FailedPrecondition(f"the IPU-Link between IPUs {link[0]} and {link[1]} has failed: a collective's"
                                     " ring crosses it; repair it or use a partition whose rings avoid it")

    def free_tensor(self, ipu: int, name: str) -> None:
        """Free `name` wherever it is: in the IPU's SRAM, offloaded in Streaming Memory, or a hold()."""
        memory = self.memory(ipu)
        if self.held[self.local(ipu)].pop(name, None) is not None:
            return
        if name not in memory.tensors and (self.local(ipu), name) in self.streaming.tensors:
            self.streaming.discard(self.local(ipu), name, memory.label)
            return
        memory.free(name)

    def free_each(self, held: list[tuple[int, str]]) -> None:
        """free_tensor of each (IPU, name), best effort (a job's cleanup): one already gone is skipped."""
        for ipu, name in held:
            try:
                self.free_tensor(ipu, name)
            except VipuError:
                pass

    def offload(self, ipu: int, name: str) -> float:
        return self.streaming.offload(self.local(ipu), self.memory(ipu), name)

    def load(self, ipu: int, name: str) -> float:
        return self.streaming.load(self.local(ipu), self.memory(ipu), name)

    def put_offloaded(self, ipu: int, name: str, array: np.ndarray) -> None:
        """Place `array` straight in Streaming Memory as the IPU's tensor `name` (the host writing the machine's
        DRAM, never through the IPU's SRAM), replacing a tensor of that name in SRAM or Streaming Memory."""
        memory = self.memory(ipu)
        self.streaming.store(self.local(ipu), memory, name, array)
        if name in memory.tensors:
            memory.free(name)

    def offload_batch(self, ipus: list[int], name: str) -> None:
        """Move `name` of each IPU to Streaming Memory, uncharged: settle_streaming() charges the batch."""
        for ipu in ipus:
            self.streaming.offload(self.local(ipu), self.memory(ipu), name, charge=False)

    def load_batch(self, ipus: list[int], name: str) -> None:
        for ipu in ipus:
            self.streaming.load(self.local(ipu), self.memory(ipu), name, charge=False)

    def settle_streaming(self, bytes_in: int, bytes_out: int) -> float:
        """Charge a training step's streaming: one duplex batch (hardware/streaming_cost.py duplex_s); returns its
        seconds."""
        return self.streaming.settle(bytes_in, bytes_out)

    def reserve(self, ipu: int, name: str, nbytes: int) -> None:
        """Hold `nbytes` of the IPU's SRAM under `name` with no data kept (what a program allocates for buffers
        this emulation keeps elsewhere, e.g. a training step's activations); over SRAM it fails as put_tensor
        does, naming the tensor and the bytes over."""
        self.memory(ipu).reserve(name, nbytes)

    def hold(self, name: str, held: dict[int, tuple[int, int]]) -> None:
        """Account under `name`, until free_tensor(ipu, name), what each IPU of a training job holds on the Pod,
        held[ipu] = (SRAM at the step's peak, Streaming Memory): its last step's count (holdings.py). While an IPU
        has a hold, stats() reports the holds' bytes for it instead of its allocations (module docstring)."""
        for ipu, (sram, streaming) in held.items():
            if sram < 0 or streaming < 0:
                raise InvalidArgument(f"hold {name!r} on IPU {ipu}: {sram} bytes of SRAM and {streaming} of Streaming"
                                      " Memory; give non-negative bytes")
            self.memory(ipu)  # refuses failed IPUs
        for ipu, (sram, streaming) in held.items():
            self.held[self.local(ipu)][name] = (int(sram), int(streaming))

    # --- time and traffic -------------------------------------------------------------------------------------
    def record_traffic(self, link_type: str, sent_bytes: int, received_bytes: int, virtual_s: float,
                       times: int = 1) -> None:
        """Fold in traffic the fabric moved for this machine and the virtual time it charged for it, `times` times
        (the time added once a time: the same sum as `times` calls)."""
        if link_type not in self.links:
            raise InvalidArgument(f"link_type {link_type!r} is not one of {', '.join(LINK_TYPES)}; use one of them")
        if sent_bytes < 0 or received_bytes < 0 or virtual_s < 0:
            raise InvalidArgument(f"traffic on {link_type} must be non-negative, got sent {sent_bytes}, received"
                                  f" {received_bytes}, {virtual_s} s")
        counters = self.links[link_type]
        counters.sent_bytes += int(sent_bytes) * times
        counters.received_bytes += int(received_bytes) * times
        for _ in range(times):
            counters.virtual_s += float(virtual_s)
        counters.reports += times

    def run_step(self, step: bsp.Step) -> bsp.StepTimes:
        """Run a BSP step on this machine's IPUs (in virtual time) and add its phases to the counters. The same
        step object run again (a training loop's, machine_charges.py) is renumbered and priced once: steps are
        frozen, and the price depends on the step and the machine's fixed figures only."""
        given, times = step, None
        kept = self._priced.get(given)
        if kept is not None:
            step, times = kept
        else:
            step = self._pod_wide(step)
        for ipu in step.participants():
            self.memory(ipu)  # refuses failed IPUs
        for cs in step.compute_sets:
            for ipu, work in cs.ipus.items():
                self._check_sends(ipu, work.sends)
        if times is None:
            times = bsp.run(step, self.pod.ipu, self.pod.links.ipu_link)
            self._priced.put(given, (step, times))
        for ipu, phases in times.ipus.items():
            local = self.local(ipu)
            self.phases[local] = self.phases[local] + phases
            self.last[local] = phases
        for cs in step.compute_sets:
            for work in cs.ipus.values():
                for peer, nbytes in work.sends.items():
                    self.links["ipu_link"].sent_bytes += nbytes
                    if self.first_ipu <= peer < self.first_ipu + self.size:
                        self.links["ipu_link"].received_bytes += nbytes
        self.steps += 1
        return times

    def _pod_wide(self, step: bsp.Step) -> bsp.Step:
        def renumber(work_by_ipu: dict) -> dict:
            renumbered = {self.first_ipu + self.local(k): w for k, w in work_by_ipu.items()}
            if len(renumbered) != len(work_by_ipu):
                raise InvalidArgument(f"step {step.name!r} names an IPU of machine {self.index} twice (once inside"
                                      " the machine, once Pod-wide); use one numbering")
            return renumbered

        sets = [cs.model_copy(update={"ipus": renumber(cs.ipus)}) for cs in step.compute_sets]
        if step.ipus is None:  # the IPUs with work, and those of this machine they send to: receivers sync too
            mine = range(self.first_ipu, self.first_ipu + self.size)
            receivers = {peer for cs in sets for work in cs.ipus.values() for peer in work.sends if peer in mine}
            ipus = sorted({k for cs in sets for k in cs.ipus} | receivers)
        else:
            ipus = sorted(renumber(dict.fromkeys(step.ipus)))
        return step.model_copy(update={"compute_sets": sets, "ipus": ipus})

    def _check_sends(self, ipu: int, sends: dict[int, int]) -> None:
        for peer in sends:
            if not 0 <= peer < self.pod.ipus or peer == ipu:
                raise InvalidArgument(f"IPU {ipu} sends to IPU {peer}: give another IPU of {self.pod.name},"
                                      f" 0..{self.pod.ipus - 1}, by its Pod-wide number")
            link = (min(ipu, peer), max(ipu, peer))
            if link in self.failed_links:
                raise FailedPrecondition(f"the IPU-Link between IPUs {link[0]} and {link[1]} has failed; repair it"
                                         " or route the exchange another way")
            if self.first_ipu <= peer < self.first_ipu + self.size:
                self.memory(peer)

    # --- faults -----------------------------------------------------------------------------------------------
    def fail_ipu(self, ipu: int) -> None:
        self.failed_ipus.add(self.local(ipu))

    def fail_link(self, a: int, b: int) -> None:
        """Fail the IPU-Link between Pod-wide IPUs a and b; at least one of them must be on this machine."""
        a, b = sorted((operator.index(a), operator.index(b)))
        mine = range(self.first_ipu, self.first_ipu + self.size)
        if a not in mine and b not in mine:
            raise InvalidArgument(f"IPU-Link {a}-{b} does not touch machine {self.index} (IPUs {mine.start}.."
                                  f"{mine.stop - 1}); send it to a machine it touches")
        if not (0 <= a < b < self.pod.ipus) or not self.topology.linked(a, b):
            raise InvalidArgument(f"IPUs {a} and {b} are not joined by an IPU-Link in {self.pod.name}; name two"
                                  " neighbours (see the preset's ild_topology)")
        self.failed_links.add((a, b))

    def repair(self) -> None:
        """Bring every failed IPU and IPU-Link back; repaired IPUs are reset (their tile memory is empty)."""
        for local in self.failed_ipus:
            self.memories[local].clear()
            self.held[local].clear()
            self.last[local] = bsp.PhaseTimes()
        self.failed_ipus.clear()
        self.failed_links.clear()

    # --- reports ----------------------------------------------------------------------------------------------
    def health(self) -> dict:
        return {
            "machine": self.index,
            "ipus": self.ipus,
            "failed_ipus": sorted(self.first_ipu + i for i in self.failed_ipus),
            "failed_links": [list(link) for link in sorted(self.failed_links)],
        }

    def stats(self) -> dict:
        """Plain numbers for metrics: per IPU memory and phase times, Streaming Memory, link traffic. `per_ipu` is
        keyed by the Pod-wide IPU number (an int). Phase times are totals since the machine started; utilisation
        is compute / step time of the IPU's last step (0 before its first), so it shows the work running now, not
        an average over every job the machine has run."""
        ipus = {}
        streaming_used = 0
        for local, (memory, phases, last) in enumerate(zip(self.memories, self.phases, self.last)):
            sram, streamed = self._in_use(local)
            streaming_used += streamed
            ipus[self.first_ipu + local] = {
                "failed": local in self.failed_ipus,
                "sram_used_bytes": sram,
                "sram_allocated_bytes": memory.used_bytes,
                "sram_free_bytes": memory.free_bytes,
                "tensors": len(memory.tensors),
                "compute_s": phases.compute_s,
                "sync_s": phases.sync_s,
                "exchange_s": phases.exchange_s,
                "utilisation": last.compute_s / last.total_s if last.total_s else 0.0,
            }
        streaming = self.streaming
        return {
            **self.health(),
            "steps": self.steps,
            "per_ipu": ipus,
            "streaming": {"capacity_bytes": streaming.capacity_bytes, "used_bytes": streaming_used,
                          "allocated_bytes": streaming.used_bytes,
                          "tensors": len(streaming.tensors), **asdict(streaming.transfers)},
            "links": {kind: asdict(counters) for kind, counters in self.links.items()},
        }

    def _in_use(self, local: int) -> tuple[int, int]:
        """(SRAM, Streaming Memory) the IPU holds as the Pod would: its holds, or else its allocations."""
        if self.held[local]:
            return tuple(map(sum, zip(*self.held[local].values())))
        offloaded = sum(t.nbytes for (ipu, _), t in self.streaming.tensors.items() if ipu == local)
        return self.memories[local].used_bytes, offloaded
