"""Where each IPU sits: machines, IPU-Link domains (ILDs), the IPU-Link grid, and rings through a partition.

IPUs are numbered 0..N-1 machine by machine: IPU `i` is IPU `i % 4` of machine `i // 4`, and machine `m` is row
`m % machines_per_ild` of ILD `m // machines_per_ild`. Inside an ILD the IPU-Links form a grid of rows (machines)
by columns (the IPUs of a machine): an IPU links to its neighbours in the machine (a ring of 4) and to the same IPU
of the machines above and below, wrapping round at the ends when the ILD is a torus (the layout is an assumption
stated in the presets: the exact dimensions are not published). Because blocks are numbered this way, an aligned
block of 2^k IPUs is a sub-grid: part of one machine, or whole adjacent machines, or whole ILDs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig


@dataclass(frozen=True)
class IpuPlace:
    ipu: int
    machine: int
    index: int  # IPU number inside its machine, 0..3
    ild: int
    row: int  # the machine's row inside its ILD


class Topology:
    def __init__(self, pod: PodConfig):
        self.pod = pod
        self.ipus_per_machine = pod.machine.ipus
        self.ild_ipus = pod.ild_ipus
        self.size = pod.ipus

    def place(self, ipu: int) -> IpuPlace:
        machine, index = divmod(ipu, self.ipus_per_machine)
        ild, row = divmod(machine, self.pod.machines_per_ild)
        return IpuPlace(ipu, machine, index, ild, row)

    def ipu_at(self, ild: int, row: int, index: int) -> int:
        return (ild * self.pod.machines_per_ild + row) * self.ipus_per_machine + index

    def machines_of(self, first: int, size: int) -> list[int]:
        """The machines under the block of `size` IPUs starting at `first`."""
        return list(range(first // self.ipus_per_machine, (first + size - 1) // self.ipus_per_machine + 1))

    def require_link(self, a: int, b: int) -> None:
        """The rule for naming an IPU-Link (fault injection): both IPUs exist and are neighbours on the grid."""
        for ipu in (a, b):
            if not 0 <= ipu < self.size:
                raise InvalidArgument(f"ipu {ipu} does not exist; {self.pod.name} has IPUs 0 to {self.size - 1}")
        if not self.linked(a, b):
            raise InvalidArgument(
                f"IPUs {a} and {b} are not joined by an IPU-Link; `vipu get partition` shows a ring of linked IPUs")

    def machine_ipus(self, machine: int) -> range:
        return range(machine * self.ipus_per_machine, (machine + 1) * self.ipus_per_machine)

    def machines_mask(self, machines) -> int:
        """Bit i set for every IPU i of the machines. Built as bytes: a machine's 2 or 4 IPUs (pod.py) never cross
        a byte, and a mask as wide as 65,536 IPUs is converted once rather than copied for every machine."""
        per = self.ipus_per_machine
        buf = bytearray((self.size + 7) >> 3)
        whole = (1 << per) - 1
        for machine in machines:
            first = machine * per
            buf[first >> 3] |= whole << (first & 7)
        return int.from_bytes(buf, "little")

    @cached_property
    def ipu_links(self) -> frozenset[frozenset[int]]:
        """Every IPU-Link as an unordered pair of IPUs."""
        links: set[frozenset[int]] = set()
        rows, cols = self.pod.machines_per_ild, self.ipus_per_machine
        torus = self.pod.ild_topology == "torus"
        for ild in range(self.pod.ilds):
            for row in range(rows):
                for col in range(cols):
                    here = self.ipu_at(ild, row, col)
                    if cols > 1:
                        links.add(frozenset((here, self.ipu_at(ild, row, (col + 1) % cols))))
                    if row + 1 < rows or (torus and rows > 2):
                        links.add(frozenset((here, self.ipu_at(ild, (row + 1) % rows, col))))
        return frozenset(link for link in links if len(link) == 2)

    def neighbours(self, ipu: int) -> frozenset[int]:
        """The IPUs `ipu` has an IPU-Link to, from its place on the grid (the same pairs as ipu_links, without
        building every link of the Pod: 131,072 of them on 65,536 IPUs)."""
        return _neighbours(self, ipu)

    def linked(self, a: int, b: int) -> bool:
        return 0 <= a < self.size and 0 <= b < self.size and b in self.neighbours(a)

    def ring(self, first: int, size: int) -> list[int]:
        """The IPUs of the aligned block [first, first+size) in an order where each is IPU-Linked to the next
        (and, for sizes above 2, the last to the first), inside one ILD. Blocks bigger than an ILD are rings per
        ILD joined over GW-Links: this returns the ring of each ILD in turn."""
        if size > self.ild_ipus:
            return [ipu for start in range(first, first + size, self.ild_ipus) for ipu in self.ring(start, self.ild_ipus)]
        cols = self.ipus_per_machine
        if size <= cols:
            return list(range(first, first + size))
        # Rows x cols sub-grid with an even number of rows (a power of two >= 2): go along the first row, snake
        # back and forth through the other columns, and return up column 0: a Hamiltonian cycle on the grid.
        rows = size // cols
        top = self.place(first)
        grid = [[self.ipu_at(top.ild, top.row + r, c) for c in range(cols)] for r in range(rows)]
        order = list(grid[0])
        for r in range(1, rows):
            columns = range(cols - 1, 0, -1) if r % 2 else range(1, cols)
            order.extend(grid[r][c] for c in columns)
        order.extend(grid[r][0] for r in range(rows - 1, 0, -1))
        return order


@lru_cache(maxsize=16)
def topology_of(pod: PodConfig) -> Topology:
    """The Topology of `pod`, made once: what is kept by topology (its link model's routes, the schedules priced on
    it: fabric/known_schedules.py) then serves every run on that Pod, not only the one that made it."""
    return Topology(pod)


@lru_cache(maxsize=1 << 16)
def _neighbours(topology: Topology, ipu: int) -> frozenset[int]:
    place = topology.place(ipu)
    rows, cols = topology.pod.machines_per_ild, topology.ipus_per_machine
    wraps = topology.pod.ild_topology == "torus" and rows > 2
    out = set()
    if cols > 1:
        out.update(topology.ipu_at(place.ild, place.row, (place.index + step) % cols) for step in (1, -1))
    for row in (place.row - 1, place.row + 1):
        if 0 <= row < rows or wraps:
            out.add(topology.ipu_at(place.ild, row % rows, place.index))
    out.discard(ipu)
    return frozenset(out)
