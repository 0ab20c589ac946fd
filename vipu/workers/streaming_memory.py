"""Streaming Memory: the DRAM of one IPU-Machine, where tensors that do not fit in tile SRAM are offloaded.

Phased execution (e.g. GPT-3 on a Pod256) keeps weights and optimiser state here and streams them in when a phase
needs them, so what matters is capacity and the cost of each transfer. Every transfer is charged the virtual time
vipu/hardware/streaming_cost.py gives (latency + bytes / bandwidth, the preset's figures). Nothing here reads a
clock: callers add the returned seconds to their own virtual time.

A training step streams in batches (offloaded optimiser state, phased execution): its tensors move with
offload(..., charge=False) / load(..., charge=False), which only move them, and settle(bytes_in, bytes_out)
charges the step's streaming once, as one duplex batch (streaming_cost.duplex_s), the cost the planner charges
(jobs/timing.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from vipu.errors import AlreadyExists, NotFound, ResourceExhausted
from vipu.hardware.streaming_cost import duplex_s, transfer_s
import numpy as np

from vipu.workers.tile_sram import Explicit, IpuMemory, Linear, Tensor, place


@dataclass
class Transfers:
    """Totals over the machine's life: bytes each way and the virtual seconds charged for them."""

    offloads: int = 0
    loads: int = 0
    bytes_out: int = 0  # SRAM -> Streaming Memory
    bytes_in: int = 0  # Streaming Memory -> SRAM
    virtual_s: float = 0.0


class StreamingMemory:
    """Offloaded tensors of a machine, keyed by (IPU, name): a tensor comes back to the IPU it left, on the same
    tiles, so a program's tile mapping survives the round trip."""

    def __init__(self, capacity_bytes: float, bytes_per_s: float, latency_s: float, label: str = "machine 0"):
        self.capacity_bytes = int(capacity_bytes)
        self.bytes_per_s = bytes_per_s
        self.latency_s = latency_s
        self.label = label
        self.tensors: dict[tuple[int, str], Tensor] = {}
        self.used_bytes = 0
        self.transfers = Transfers()

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self.used_bytes

    def cost_s(self, nbytes: int) -> float:
        """Virtual seconds to move `nbytes` either way (alpha-beta: one latency, then the bytes at full rate)."""
        return transfer_s(nbytes, self.bytes_per_s, self.latency_s)

    def offload(self, ipu: int, memory: IpuMemory, name: str, charge: bool = True) -> float:
        """Move tensor `name` from the IPU's SRAM to Streaming Memory; returns the virtual seconds charged (none
        with charge=False: a batch that settle() charges)."""
        key = (ipu, name)
        tensor = memory.tensor(name)
        if key in self.tensors:
            raise AlreadyExists(
                f"tensor {name!r} of {memory.label} is already in Streaming Memory of {self.label}; load it back"
                " or free it before offloading another of that name"
            )
        self._check_room(name, memory.label, tensor.nbytes, self.free_bytes)
        memory.free(name)
        self.tensors[key] = tensor
        self.used_bytes += tensor.nbytes
        return self._charge(tensor.nbytes, out=True) if charge else 0.0

    def store(self, ipu: int, memory: IpuMemory, name: str, array: np.ndarray) -> None:
        """Place `array` straight in Streaming Memory as tensor `name` of the IPU, as the host writes a machine's
        DRAM, replacing one of that name there; mapped over the IPU's tiles as a put would map it (Linear), so
        load() brings it onto them. Uncharged: host I/O, as a put is."""
        array = np.asarray(array)
        old = self.tensors.get((ipu, name))
        self._check_room(name, memory.label, array.nbytes, self.free_bytes + (old.nbytes if old else 0))
        data = np.array(array, copy=True, order="C")  # only once it fits
        slices = place(Linear(), data.size, data.itemsize, memory.tiles, name)
        if old is not None:
            self.discard(ipu, name, memory.label)
        self.tensors[(ipu, name)] = Tensor(name, data, slices)
        self.used_bytes += data.nbytes

    def _check_room(self, name: str, label: str, nbytes: int, free: int) -> None:
        if nbytes > free:
            raise ResourceExhausted(
                f"out of Streaming Memory on {self.label}: tensor {name!r} of {label} needs {nbytes:,} bytes but"
                f" {free:,} of {self.capacity_bytes:,} are free: {nbytes - free:,} bytes over; free offloaded"
                " tensors or configure more machine.streaming_memory_bytes"
            )

    def load(self, ipu: int, memory: IpuMemory, name: str, charge: bool = True) -> float:
        """Move tensor `name` back onto the tiles it left; if SRAM has no room now, it stays offloaded."""
        tensor = self.tensor(ipu, name, memory.label)
        mapping = Explicit(tuple((s.tile, (s.stop - s.start) * tensor.data.itemsize) for s in tensor.slices))
        memory.allocate(name, tensor.data, mapping)
        self.discard(ipu, name, memory.label)
        return self._charge(tensor.nbytes, out=False) if charge else 0.0

    def settle(self, bytes_in: int, bytes_out: int) -> float:
        """Charge one batch of streaming (bytes each way, as the real Pod moves them): duplex_s."""
        seconds = duplex_s(bytes_in, bytes_out, self.bytes_per_s, self.latency_s)
        t = self.transfers
        t.bytes_in, t.bytes_out = t.bytes_in + int(bytes_in), t.bytes_out + int(bytes_out)
        t.loads, t.offloads = t.loads + (bytes_in > 0), t.offloads + (bytes_out > 0)
        t.virtual_s += seconds
        return seconds

    def tensor(self, ipu: int, name: str, label: str) -> Tensor:
        try:
            return self.tensors[(ipu, name)]
        except KeyError:
            raise NotFound(f"tensor {name!r} of {label} is not in Streaming Memory of {self.label}; offload it"
                           " first") from None

    def discard(self, ipu: int, name: str, label: str) -> None:
        tensor = self.tensor(ipu, name, label)
        del self.tensors[(ipu, name)]
        self.used_bytes -= tensor.nbytes

    def _charge(self, nbytes: int, out: bool) -> float:
        seconds = self.cost_s(nbytes)
        t = self.transfers
        if out:
            t.offloads, t.bytes_out = t.offloads + 1, t.bytes_out + nbytes
        else:
            t.loads, t.bytes_in = t.loads + 1, t.bytes_in + nbytes
        t.virtual_s += seconds
        return seconds
