"""A collective's steps on one machine, as its actor runs them: what the machine reads for other machines, and the
writes of a step, its own transfers and those from other machines.

Why apart from machine.py: the Machine is the state (SRAM, Streaming Memory, counters); this is one way of using
it, with the machine's own checks (a failed IPU, a failed IPU-Link from the sender), for RayTransport, which sends
each machine one call per step, or one per run of steps inside it (vipu/fabric/ray_transport.py).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from vipu.workers.machine import Machine

Ranges = Sequence[tuple[int, int]]  # flat element ranges [start, stop) of a tensor
LocalTransfer = tuple[int, int, Ranges, bool]  # (src IPU, dst IPU, ranges, reduce)
Incoming = tuple[int, Ranges, bool, int, int, int]  # (dst IPU, ranges, reduce, sender IPU, pack, item)


def read_transfers(machine: Machine, name: str, reads: Sequence[tuple[int, Ranges]]) -> list[np.ndarray]:
    """For each (IPU, ranges) one flat array of the values in those ranges of `name`: what a step of a collective
    sends from this machine's IPUs."""
    return [machine.read_ranges(ipu, name, ranges) for ipu, ranges in reads]


def exchange(machine: Machine, name: str, steps: Sequence[tuple[Sequence[LocalTransfer], Sequence[Incoming]]],
             packs: Sequence[Sequence[np.ndarray]] = ()) -> None:
    """Run steps of collectives on the machine, in order. Each step is (local, incoming): `local` transfers (src,
    dst, ranges, reduce) between its own IPUs, and `incoming` ones (dst, ranges, reduce, sender, pack, item) whose
    values are packs[pack][item], what another machine's read_transfers gave. In each step every local read comes
    before any write; reduce adds the values in, else they are written over; a transfer from an IPU over a failed
    IPU-Link is refused (the sender is a Pod-wide IPU number).

    A step with no incoming values runs in place (in_place): RayTransport sends only hazard-free steps (no IPU
    reads what another transfer of the step writes, transport.py), so no read needs a copy first."""
    for local, incoming in steps:
        if not incoming:
            in_place(machine, name, local)
            continue
        values = read_transfers(machine, name, [(src, ranges) for src, _, ranges, _ in local])
        for (src, dst, ranges, reduce), flat in zip(local, values):
            _write(machine, name, dst, ranges, reduce, src, flat)
        for dst, ranges, reduce, sender, pack, item in incoming:
            _write(machine, name, dst, ranges, reduce, sender, packs[pack][item])


def _write(machine: Machine, name: str, ipu: int, ranges: Ranges, reduce: bool, sender: int,
           flat: np.ndarray) -> None:
    machine.write_ranges(ipu, name, ranges, flat, reduce, sender)


def in_place(machine: Machine, name: str, local: Sequence[LocalTransfer]) -> None:
    """A hazard-free step of local transfers, each range added or copied straight from src's tensor into dst's:
    every tensor and range is checked (a failed IPU, a missing tensor, a failed IPU-Link, a range outside) before
    anything moves."""
    memories = {ipu: machine.memory(ipu) for transfer in local for ipu in transfer[:2]}
    tensors = {ipu: memory.tensor(name) for ipu, memory in memories.items()}
    for src, dst, ranges, _ in local:
        machine.check_received(dst, src)
        for a, b in ranges:
            memories[src].check_range(tensors[src], a, b)
            memories[dst].check_range(tensors[dst], a, b)
    writes = {dst: tensors[dst].writable() for _, dst, _, _ in local}  # before any moves: a copy if lent
    for src, dst, ranges, reduce in local:
        read, write = tensors[src].flat, writes[dst]
        for a, b in ranges:
            if reduce:
                write[a:b] += read[a:b]  # local + incoming, as the machine's add_slice does
            else:
                write[a:b] = read[a:b]
