"""Stored records checked against the Pod and each other before a controller serves them.

Why: a partition record that overlaps another, or one outside the Pod, loads without error, and the next create
then places a partition on IPUs the first still holds. A start refuses such records by name instead (or moves them
aside: vipu-server --quarantine-bad-records), as it does records that do not parse.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from pydantic import BaseModel

from vipu.hardware.pod import PodConfig
from vipu.partition.admin_records import Agent, IpuFailure


class Contradiction(NamedTuple):
    kind: str
    name: str
    why: str


def contradictions(pod: PodConfig, records: Iterable[tuple[str, BaseModel]]) -> list[Contradiction]:
    """The records that cannot all be true of this Pod; of two overlapping partitions, the later one."""
    found: list[Contradiction] = []
    holder: dict[int, str] = {}
    partitions = sorted((r for k, r in records if k == "partition"), key=lambda p: (p.created_at, p.name))
    for p in partitions:
        if p.first_ipu < 0 or p.size < 1 or p.first_ipu + p.size > pod.ipus:
            found.append(Contradiction("partition", p.name, f"holds IPUs {p.first_ipu}-{p.first_ipu + p.size - 1},"
                                       f" outside this Pod's 0-{pod.ipus - 1}"))
            continue
        taken = [i for i in p.ipus if i in holder]
        if taken:
            found.append(Contradiction("partition", p.name, f"holds IPU {taken[0]}, which partition"
                                       f" {holder[taken[0]]} holds too"))
            continue
        holder.update((i, p.name) for i in p.ipus)
    for kind, r in records:
        if isinstance(r, Agent) and not 0 <= r.machine < pod.machines:
            found.append(Contradiction(kind, r.name, f"is the agent of machine {r.machine}, outside this Pod's"
                                       f" 0-{pod.machines - 1}"))
        elif isinstance(r, IpuFailure) and not 0 <= r.ipu < pod.ipus:
            found.append(Contradiction(kind, r.name, f"marks IPU {r.ipu} failed, outside this Pod's 0-{pod.ipus - 1}"))
    return found
