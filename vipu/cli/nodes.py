"""IPU-Machines as Slurm's nodes, for squeue's %N and %D, sacct's NodeList and NNodes and sinfo -N.

The mapping (docs/mapping.md): a node is an IPU-Machine (a Bow-2000, 4 IPUs), named by its agent (ag00, ag01, ...,
or machineN for one without an agent); a CPU is an IPU, so a job's CPUS are its IPUs and its NODES the machines its
block spans; Slurm's partition is the V-IPU allocation a job runs in ("default" when it names none)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from vipu.v1 import partition_pb2 as p

DEFAULT_PARTITION = "default"  # the allocation of every agent that no named allocation holds
_NUMBERED = re.compile(r"(.*?)([0-9]+)")


def hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed node list: ag[00-03,06],machine9; a name alone as it is. Prefixes in the order first
    seen, numbers in order, and a range only over numbers written with the same width."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for name in dict.fromkeys(names):
        m = _NUMBERED.fullmatch(name)
        prefix, digits = (m.group(1), m.group(2)) if m else (name, "")
        groups.setdefault(prefix, []).append((int(digits) if digits else -1, digits))
    parts = []
    for prefix, numbers in groups.items():
        if numbers == [(-1, "")]:
            parts.append(prefix)
            continue
        numbers.sort()
        spans: list[list[tuple[int, str]]] = []
        for n in numbers:
            last = spans[-1][-1] if spans else None
            if last is not None and n[0] == last[0] + 1 and len(n[1]) == len(last[1]):
                spans[-1].append(n)
            else:
                spans.append([n])
        text = ",".join(s[0][1] if len(s) == 1 else f"{s[0][1]}-{s[-1][1]}" for s in spans)
        parts.append(f"{prefix}{text}" if len(numbers) == 1 else f"{prefix}[{text}]")
    return ",".join(parts)


def ranges(numbers: Iterable[int]) -> str:
    """Numbers, each once, as runs: 0-13,15."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def numbered(prefix: str, numbers: Iterable[int]) -> str:
    """Numbered names as one hostlist: pod64-[0-13,15], or pod64-3 for one. Unlike hostlist(), a range spans
    numbers of different widths: these names are not padded."""
    text = ranges(numbers)
    return f"{prefix}{text}" if text.isdigit() else f"{prefix}[{text}]"


@dataclass(frozen=True)
class Machines:
    """Which node each IPU is on (by IPU id), from `vipu list ipus`."""

    ipus: tuple  # the controller's Ipu messages, by id

    @classmethod
    def fetch(cls, conn) -> Machines:
        listed = conn.every_page(conn.partitions.ListIpus, p.ListIpusRequest()).ipus
        return cls(tuple(sorted(listed, key=lambda i: i.id)))

    @cached_property
    def per_machine(self) -> int:
        machines = {i.machine for i in self.ipus}
        return max(1, len(self.ipus) // max(1, len(machines)))

    def name(self, ipu) -> str:
        return ipu.agent or f"machine{ipu.machine}"

    def spanned(self, first_ipu: int, count: int) -> list[str]:
        """The node names of a block of IPUs, each once, in order."""
        return list(dict.fromkeys(self.name(i) for i in self.ipus[first_ipu:first_ipu + count]))

    def count(self, ipus: int) -> int:
        """The nodes a job of this many IPUs spans: its block is aligned, so a whole number of machines or one."""
        return max(1, math.ceil(ipus / self.per_machine))
