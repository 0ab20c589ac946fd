"""Which rings a group's collectives run on and which elements each ring carries: the plan behind every schedule.

- One IPU: nothing moves.
- A block inside one ILD: the directed rings of rings.py (m of them: 1, 2 or 4). Shard i is cut into m pieces and
  ring r carries piece r of every shard, so each ring moves 1/m of the data and every link direction is busy.
- A block of k whole ILDs (Pod128, Pod256; Graphcore's hierarchical scheme): the same rings inside every ILD, then
  one GW ring per position q through the IPUs at q in each ILD, in ILD order. The IPU at position q owns, on its
  ILD's ring r, piece r of the shards of all k ranks at position q (ranks j*64 + q); its GW ring then works on those
  k shards, so after the GW reduce-scatter rank j*64 + q holds exactly shard j*64 + q.
- One IPU per ILD (Group.across_ilds): only the GW ring.

A Ring's `chunks` maps each owner IPU to the element ranges it owns on that ring: on a reduce-scatter they end up
fully reduced at the owner, on an all-gather the owner provides them.
"""

from __future__ import annotations

from dataclasses import dataclass

from vipu.fabric.group import Group, Range, shard, split
from vipu.fabric.rings import block_rings


@dataclass(frozen=True)
class Ring:
    ipus: tuple[int, ...]
    chunks: dict[int, tuple[Range, ...]]  # owner IPU -> its element ranges on this ring (no empty ones)
    sizes: dict[int, int]  # owner IPU -> elements it owns on this ring

    @classmethod
    def of(cls, ipus, chunks: dict[int, list[Range]]) -> Ring:
        kept = {owner: tuple(r for r in ranges if r[1] > r[0]) for owner, ranges in chunks.items()}
        return cls(tuple(ipus), kept, {owner: sum(b - a for a, b in ranges) for owner, ranges in kept.items()})

    def position(self, ipu: int) -> int:
        return self.ipus.index(ipu)


@dataclass(frozen=True)
class Plan:
    group: Group
    numel: int
    intra: tuple[Ring, ...]  # rings inside ILDs, all of the same length
    gw: tuple[Ring, ...]  # rings across ILDs over GW-Links, all of the same length
    rings_per_ild: int  # directed rings through each IPU inside its ILD (m)


def plan(group: Group, numel: int) -> Plan:
    topology, k = group.topology, group.ilds
    if group.size == 1:
        return Plan(group, numel, (), (), 0)
    if group.kind == "across-ilds":
        ring = Ring.of(group.ipus, {ipu: [shard(numel, group.size, j)] for j, ipu in enumerate(group.ipus)})
        return Plan(group, numel, (), (ring,), 0)
    per_ild = group.ild_size
    first = group.ipus[0]
    base = block_rings(topology, first, per_ild)
    m = len(base)
    pieces = [split(shard(numel, group.size, i), m) for i in range(group.size)]  # pieces[rank][ring]
    intra = []
    for j in range(k):
        offset = j * per_ild
        for r, ring in enumerate(base):
            ipus = [ipu + offset for ipu in ring]
            chunks = {ipu: [pieces[jj * per_ild + ipu - offset - first][r] for jj in range(k)] for ipu in ipus}
            intra.append(Ring.of(ipus, chunks))
    gw = []
    if k > 1:
        for q in range(per_ild):
            ipus = [first + q + j * per_ild for j in range(k)]
            gw.append(Ring.of(ipus, {ipu: [shard(numel, group.size, j * per_ild + q)] for j, ipu in enumerate(ipus)}))
    return Plan(group, numel, tuple(intra), tuple(gw), m)
