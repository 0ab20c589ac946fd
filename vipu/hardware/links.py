"""The links a collective's bytes travel on, what each costs, and which route a transfer takes.

Every figure comes from the Pod preset (PodConfig); their standing, repeated from presets/bow-2000.yaml:
- IPU-Link bandwidth, pod.links.ipu_link.bytes_per_s: 32 GB/s per link per direction, *derived* (an x16 IPU-Link
  port is 64 GB/s (seed) counted both ways). The seed's GPT-3 figure says 15.75 GB/s raw per link instead;
  bench/bench_fabric.py prints the fidelity table with both.
- IPU-Link latency, pod.links.ipu_link.latency_s: 1 us per hop, *assumption* (incl. the sync; not published).
- GW-Link bandwidth, pod.links.gw_link.bytes_per_s: 12.5 GB/s per link per direction, *seed* (100 Gbps);
  links_per_machine 2, *seed*; latency_s 5 us, *assumption* (RoCE-class rack to rack; not published).
- gamma, the reduction cost per byte: pod.ipu.reduce_s_per_byte (figures.py: 3 / sram_bytes_per_s, *derived* from
  the seed's 65 TB/s SRAM figure on the *assumption* that adding a received chunk is SRAM-bound), not overlapped
  with the exchange (BSP: an IPU computes, syncs, then exchanges, never both at once).

Layout, from topology.py (the preset states it): inside an IPU-Link domain (ILD) an IPU links to its two
neighbours in its machine (a ring of 4) and to the same IPU of the machines above and below (wrapping round in a
torus ILD). Links are full duplex: a link id names one direction, so a ring and its reverse never compete.

GW-Links, *assumptions* (not published): IPU i of a machine sends over GW-Link i * links_per_machine // ipus (IPUs
0-1 on link 0, IPUs 2-3 on link 1), so four IPUs driving their machine's two GW-Links together get 6.25 GB/s each,
hardware.md's figure; a cross-ILD transfer crosses the sender's GW-Link outwards and the receiver's inwards and pays
one GW latency; the switches of a Pod256 ("GW-Links through two switches") are non-blocking. So cross-ILD traffic
of one partition competes only on its own machines' GW-Links; fabric/ledger.py counts other collectives on them.

Why partitions never compete for IPU-Links: partition/placement.py gives every partition an aligned power-of-two
block, which is a sub-grid of the IPU-Link grid, and routes here stay inside the group's own IPUs (`within`), so a
partition's ring traffic only ever uses links whose two ends are both its own IPUs. Two partitions never share an
IPU, hence never share an IPU-Link: no IPU-Link ledger is needed (fabric/ledger.py counts only GW-Links).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache

from vipu.errors import InvalidArgument
from vipu.hardware.figures import GW_LINK, IPU_LINK
from vipu.hardware.topology import Topology

LinkId = tuple  # ("ipu", a, b): IPU-Link a -> b; ("gw-out" | "gw-in", machine, link index): one GW-Link direction


@dataclass(frozen=True)
class Route:
    """How a transfer travels: its link type, the link directions it occupies, and its latency (alpha)."""

    kind: str
    links: tuple[LinkId, ...]
    alpha_s: float


class LinkModel:
    """Bandwidth and latency of every link of a Pod, and routes between its IPUs; pure, built from the preset."""

    def __init__(self, topology: Topology):
        pod = topology.pod
        self.topology = topology
        self.ipu_bytes_per_s = pod.links.ipu_link.bytes_per_s
        self.ipu_alpha_s = pod.links.ipu_link.latency_s
        self.gw_bytes_per_s = pod.links.gw_link.bytes_per_s
        self.gw_alpha_s = pod.links.gw_link.latency_s
        self.gw_links_per_machine = pod.links.gw_link.links_per_machine
        self.gamma_s_per_byte = pod.ipu.reduce_s_per_byte

    def bandwidth(self, link: LinkId) -> float:
        return self.ipu_bytes_per_s if link[0] == "ipu" else self.gw_bytes_per_s

    def gw_link(self, ipu: int) -> tuple[int, int]:
        """(machine, link index) of the GW-Link `ipu` uses."""
        place = self.topology.place(ipu)
        return place.machine, place.index * self.gw_links_per_machine // self.topology.ipus_per_machine

    def gw_bytes_per_ipu(self, ipus_per_machine_sending: int) -> float:
        """GW bandwidth per IPU when that many IPUs of one machine send at once (6.25 GB/s for 4 on a Bow-2000)."""
        per_link = -(-ipus_per_machine_sending // self.gw_links_per_machine)  # IPUs sharing the busiest link
        return self.gw_bytes_per_s / max(1, per_link)

    def route(self, src: int, dst: int, within: frozenset[int] | None = None) -> Route:
        return _route(self, src, dst, within)

    def ipu_path(self, src: int, dst: int, within: frozenset[int] | None) -> list[int]:
        """Shortest IPU-Link path from src to dst through IPUs of `within` (all of the ILD if None); ties go to
        the lowest-numbered neighbour, so routes are deterministic."""
        if self.topology.linked(src, dst):
            return [src, dst]
        ild = self.topology.place(src).ild
        allowed = within if within is not None else frozenset(
            range(ild * self.topology.ild_ipus, (ild + 1) * self.topology.ild_ipus))
        previous = {src: src}
        queue = deque([src])
        while queue:
            here = queue.popleft()
            if here == dst:
                break
            for peer in sorted(self.topology.neighbours(here)):
                if peer in allowed and peer not in previous:
                    previous[peer] = here
                    queue.append(peer)
        if dst not in previous:
            raise InvalidArgument(f"IPUs {src} and {dst} are not joined by IPU-Links inside the group; send between"
                                  " IPUs of one partition")
        path = [dst]
        while path[-1] != src:
            path.append(previous[path[-1]])
        return path[::-1]


@lru_cache(maxsize=1 << 16)
def _route(model: LinkModel, src: int, dst: int, within: frozenset[int] | None) -> Route:
    if src == dst:
        raise InvalidArgument(f"a transfer from IPU {src} to itself needs no link; drop it")
    topology = model.topology
    if topology.place(src).ild != topology.place(dst).ild:
        return Route(GW_LINK, (("gw-out", *model.gw_link(src)), ("gw-in", *model.gw_link(dst))), model.gw_alpha_s)
    path = model.ipu_path(src, dst, within)
    hops = tuple(("ipu", a, b) for a, b in zip(path, path[1:]))
    # cut-through: every hop carries the bytes at once; each hop adds its latency
    return Route(IPU_LINK, hops, model.ipu_alpha_s * len(hops))


_models: dict[int, LinkModel] = {}


def link_model(topology: Topology) -> LinkModel:
    """The LinkModel of a topology, built once (routes are cached on it)."""
    model = _models.get(id(topology))
    if model is None or model.topology is not topology:
        model = _models[id(topology)] = LinkModel(topology)
    return model
