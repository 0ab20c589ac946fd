"""The IPUs a collective runs among: a partition's aligned block, or one IPU per ILD at the same position.

Ranks are positions in `ipus` (ascending IPU numbers). The data layout every collective shares: a tensor of E
elements is cut into `size` contiguous shards, shard i = [E*i // size, E*(i+1) // size), and rank i owns shard i
after a reduce-scatter and provides it to an all-gather.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from vipu.errors import InvalidArgument
from vipu.hardware.links import LinkModel, link_model
from vipu.hardware.topology import Topology

Range = tuple[int, int]  # flat elements [start, stop)


def shard(numel: int, parts: int, index: int) -> Range:
    return numel * index // parts, numel * (index + 1) // parts


def split(span: Range, parts: int) -> list[Range]:
    start, stop = span
    return [(start + (stop - start) * i // parts, start + (stop - start) * (i + 1) // parts) for i in range(parts)]


@dataclass(frozen=True, eq=False)
class Group:
    topology: Topology
    ipus: tuple[int, ...]
    kind: str  # "block": an aligned partition block; "across-ilds": the same position in consecutive ILDs

    @classmethod
    def block(cls, topology: Topology, first: int, size: int) -> Group:
        """A partition's IPUs: an aligned power-of-two block (placement.py), inside one ILD or of whole ILDs."""
        if size < 1 or size & (size - 1) or first % size or first < 0 or first + size > topology.size:
            raise InvalidArgument(f"IPUs [{first}, {first + size}) are not an aligned power-of-two block of the"
                                  f" {topology.size} IPUs; give a partition's first IPU and size")
        if size > topology.ild_ipus and size % topology.ild_ipus:
            raise InvalidArgument(f"a block of {size} IPUs spans ILDs of {topology.ild_ipus} but not whole ones")
        return cls(topology, tuple(range(first, first + size)), "block")

    @classmethod
    def across_ilds(cls, topology: Topology, ipu: int, ilds: int | None = None) -> Group:
        """IPU `ipu` and the IPUs at the same position in the next ILDs (a data-parallel group across Pod64s, or one
        column of the hierarchical allreduce); `ilds` defaults to every ILD of the Pod."""
        place = topology.place(ipu)
        ilds = topology.pod.ilds - place.ild if ilds is None else ilds
        if ilds < 1 or place.ild + ilds > topology.pod.ilds:
            raise InvalidArgument(f"{ilds} ILDs from ILD {place.ild} do not fit the Pod's {topology.pod.ilds}")
        return cls(topology, tuple(ipu + j * topology.ild_ipus for j in range(ilds)), "across-ilds")

    @property
    def size(self) -> int:
        return len(self.ipus)

    @cached_property
    def members(self) -> frozenset[int]:
        return frozenset(self.ipus)

    @property
    def links(self) -> LinkModel:
        return link_model(self.topology)

    @property
    def ilds(self) -> int:
        """How many ILDs the group spans."""
        return len({self.topology.place(ipu).ild for ipu in self.ipus})

    @property
    def ild_size(self) -> int:
        """IPUs of the group inside each ILD it spans."""
        return self.size // self.ilds

    def rank(self, ipu: int) -> int:
        try:
            return self.ipus.index(ipu)
        except ValueError:
            raise InvalidArgument(f"IPU {ipu} is not in the group {self.describe()}; give one of its IPUs") from None

    def machines(self) -> list[int]:
        return sorted({self.topology.place(ipu).machine for ipu in self.ipus})

    def describe(self) -> str:
        if self.kind == "block":
            return f"IPUs [{self.ipus[0]}, {self.ipus[-1] + 1})"
        return f"IPUs {list(self.ipus)}"
