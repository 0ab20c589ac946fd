"""The analytic bound an emulated allreduce is measured against (hardware.md, Thakur-Rabenseifner-Gropp 2005).

Bandwidth term: every rank sends at least 2(p-1)/p n bytes, so T >= 2(p-1)/p n / B, with B the per-IPU injection
bandwidth. B is defined honestly from the links the algorithm can use: the directed rings through each IPU (rings.py)
times the IPU-Link figure: 4 x 32 GB/s on a whole torus Pod64 (all 4 links, both ways), 2 x 32 GB/s on smaller
blocks and on a mesh Pod16, 1 x 32 GB/s for 2 IPUs. topology_injection() gives the plain topology figure beside it:
on a Pod16 mesh the IPUs of the top and bottom machines have only 3 links inside the block and a ring can use 2 of
them, so against 3 x 32 GB/s a ring would stand at 1.5; no ring schedule does better there.

Across ILDs the bound is the sum of the hierarchical scheme's phase bounds (Graphcore's published scheme, the issue's
definition): 2(p_i-1)/p_i n / B inside each ILD of p_i IPUs (reduce-scatter + all-gather), plus 2(k-1)/k (n/p_i) / B_gw
for the GW phase over k ILDs, B_gw being an IPU's share of its machine's GW-Links (6.25 GB/s when all 4 IPUs send).

Latency term: the algorithm's own step count times its alpha, 2(p_i-1) IPU-Link latencies plus 2(k-1) GW latencies
(a ring's steps; it is part of the ring model, not of a bound over all algorithms). Reduction arithmetic (gamma) is
left out of the bound and kept in the emulation, one reason the ratio is above 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from vipu.fabric.group import Group
from vipu.fabric.rings import block_rings


@dataclass(frozen=True)
class Bound:
    p: int
    nbytes: int
    ipu_bytes_per_s: float  # B: per-IPU injection bandwidth over IPU-Links that the algorithm can use
    gw_bytes_per_s: float  # B_gw: per-IPU GW-Link bandwidth (0 inside one ILD)
    bandwidth_s: float
    latency_s: float
    formula: str

    @property
    def total_s(self) -> float:
        return self.bandwidth_s + self.latency_s


def rings_per_ipu(group: Group) -> int:
    """Directed rings through each IPU inside its ILD: the link directions it sends on at once."""
    if group.kind != "block" or group.ild_size == 1:
        return 0
    return len(block_rings(group.topology, group.ipus[0], group.ild_size))


def topology_injection(group: Group) -> float:
    """Bytes/s an IPU can send over IPU-Links to other IPUs of the group: its fewest such links x the figure."""
    links = group.links
    fewest = min(sum(1 for other in group.members if other != ipu and group.topology.linked(ipu, other))
                 for ipu in group.ipus)
    return fewest * links.ipu_bytes_per_s


def allreduce_bound(group: Group, nbytes: int) -> Bound:
    links = group.links
    k, p_i = group.ilds, group.ild_size
    ipu_b = rings_per_ipu(group) * links.ipu_bytes_per_s
    per_machine = len(group.ipus) // len(group.machines())
    gw_b = links.gw_bytes_per_ipu(per_machine) if k > 1 else 0.0
    bandwidth = latency = 0.0
    parts = []
    if p_i > 1:
        bandwidth += 2 * (p_i - 1) / p_i * nbytes / ipu_b
        latency += 2 * (p_i - 1) * links.ipu_alpha_s
        parts.append(f"2({p_i}-1)/{p_i} n/{ipu_b / 1e9:g}GB/s + {2 * (p_i - 1)} a_ipu")
    if k > 1:
        bandwidth += 2 * (k - 1) / k * (nbytes / p_i) / gw_b
        latency += 2 * (k - 1) * links.gw_alpha_s
        parts.append(f"2({k}-1)/{k} (n/{p_i})/{gw_b / 1e9:g}GB/s + {2 * (k - 1)} a_gw")
    return Bound(group.size, nbytes, ipu_b, gw_b, bandwidth, latency, " + ".join(parts) or "0")
