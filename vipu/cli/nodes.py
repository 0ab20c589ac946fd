"""IPU-Machines as Slurm's nodes, for squeue's %N and %D, sacct's NodeList and NNodes and sinfo -N.

The mapping (docs/mapping.md): a node is an IPU-Machine (a Bow-2000, 4 IPUs), named by its agent (ag00, ag01, ...,
or machine00 for one without an agent; padded to the Pod's widest machine number, vipu/partition/node_names.py); a
CPU is an IPU, so a job's CPUS are its IPUs and its NODES the machines its block spans; Slurm's partition is the
V-IPU allocation a job runs in ("default" when it names none)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from vipu.partition.node_names import ranges
from vipu.v1 import partition_pb2 as p

DEFAULT_PARTITION = "default"  # the allocation of every agent that no named allocation holds


def numbered(prefix: str, numbers: Iterable[int]) -> str:
    """Numbered names as one hostlist: pod64-[0-13,15], or pod64-3 for one. Unlike hostlist(), a range spans
    numbers of different widths: these names are not padded."""
    text = ranges(numbers)
    return f"{prefix}{text}" if text.isdigit() else f"{prefix}[{text}]"


@dataclass(frozen=True)
class Machines:
    """The names of the nodes some jobs run on, by machine index, from ListMachines: only the machines their blocks
    span, not the Pod's every IPU (65,536 of them on the largest)."""

    names: dict[int, str]
    per_machine: int  # IPUs

    @classmethod
    def fetch(cls, conn, blocks: Iterable[tuple[int, int]]) -> Machines:
        """The machines these blocks of IPUs (first IPU, IPUs) span; with none, machine 0 alone, for the Pod's IPUs
        per machine (a pending job's node count)."""
        asked = [p.IpuBlock(first_ipu=first, ipus=size) for first, size in blocks] or [p.IpuBlock(ipus=1)]
        reply = conn.every_page(conn.partitions.ListMachines, p.ListMachinesRequest(blocks=asked))
        return cls({m.machine: m.name for m in reply.machines}, max(1, reply.ipus_per_machine))

    def spanned(self, first_ipu: int, count: int) -> list[str]:
        """The node names of a block of IPUs, in order."""
        first, last = first_ipu // self.per_machine, (first_ipu + max(count, 1) - 1) // self.per_machine
        return [self.names.get(m) or f"machine{m}" for m in range(first, last + 1)]

    def count(self, ipus: int) -> int:
        """The nodes a job of this many IPUs spans: its block is aligned, so a whole number of machines or one."""
        return max(1, math.ceil(ipus / self.per_machine))


def placed(x) -> bool:
    """Whether the job holds (or held, once ended) a block: a requeued job's pending run keeps none."""
    return x.state_code != "PD" and x.detail.HasField("first_ipu")


def blocks_of(jobs) -> list[tuple[int, int]]:
    """The blocks of IPUs the placed jobs among these hold (first IPU, IPUs), each once."""
    return list(dict.fromkeys((x.detail.first_ipu, x.ipus) for x in jobs if placed(x)))
