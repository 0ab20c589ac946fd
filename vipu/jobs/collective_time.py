"""Virtual time of the collectives a training step runs: ring alpha-beta (Hockney) on the Pod preset's links.

The formulas are hardware.md's (Thakur, Rabenseifner and Gropp 2005), the same ones vipu/fabric/bounds.py states
for its analytic bound, written here for groups the fabric's Group does not describe: the strided replica groups
of a t x p x r layout. With p ranks and n bytes per rank, on R directed rings of per-direction bandwidth B:

    ring allreduce  2(p-1) alpha + 2(p-1)/p n / (R B) + (p-1)/p n gamma

Across IPU-Link domains (ILDs), Graphcore's hierarchical scheme: a reduce-scatter among the p_i members inside each
ILD, an allreduce of the n/p_i shards among the k ILDs over GW-Links at an IPU's share of its machine's GW-Links,
then an all-gather inside each ILD. Stated assumptions (assumptions.py prints them):
- rings per IPU inside an ILD: 4 on a whole torus ILD (fabric/rings.py's two edge-disjoint Hamiltonian cycles,
  both ways), 2 (one cycle, both ways) on smaller groups or a mesh, 1 for 2 IPUs;
- a strided group (replicas t x p IPUs apart) inside one ILD is priced on the schedule the emulator runs
  (fabric/strided.py): its members in grid order, each step over the shortest IPU-Link path (one alpha per hop),
  every group of the layout in the same steps, links they share divided among them. A column of a torus Pod64 is
  a 1-hop ring of its own (the ring formula's figure); stride 2 inside a machine's ring of 4 is not: IPUs 0 and 2
  are 2 hops apart and the two groups share the machine's links;
- strided groups spanning ILDs run the hierarchical scheme with the strided schedule inside each ILD (its
  reduce-scatter and all-gather, links shared among the groups as above) and every IPU's shard over its share
  of its machine's GW-Links (all the groups send at once); so more replicas past an ILD never allreduce faster;
- every ring step costs one IPU-Link alpha (one hop), every GW step one GW alpha;
- a pipeline send between stages is priced on the step the emulator runs (stage_sends): shard k to shard k of
  the next stage over the shortest path, one alpha per hop; those IPUs are neighbours only in some layouts;
- gamma = pod.ipu.reduce_s_per_byte (hardware/figures.py: 3 bytes of SRAM traffic per reduced byte), as the
  fabric's link model charges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from vipu.fabric.schedule_cost import schedule_cost
from vipu.fabric.strided import strided_allreduce_s
from vipu.fabric.transfer_schedule import piece_sends
from vipu.hardware.links import link_model
from vipu.hardware.pod import PodConfig
from vipu.hardware.topology import topology_of


@dataclass(frozen=True)
class GroupShape:
    """`size` IPUs, `stride` apart (IPU numbers), starting on an aligned boundary."""

    size: int
    stride: int = 1

    def ilds(self, pod: PodConfig) -> int:
        span = self.size * self.stride
        return min(self.size, span // pod.ild_ipus) if span > pod.ild_ipus else 1


def rings_per_ipu(pod: PodConfig, members: int) -> int:
    """Directed rings through each IPU of a group of `members` IPUs inside one ILD."""
    if members <= 1:
        return 0
    if members == 2:
        return 1
    whole_torus = members == pod.ild_ipus and pod.ild_topology == "torus"
    return 4 if whole_torus else 2


def gw_bytes_per_ipu(pod: PodConfig) -> float:
    """An IPU's share of its machine's GW-Links when every IPU sends at once (6.25 GB/s on a Bow-2000)."""
    gw = pod.links.gw_link
    return gw.bytes_per_s * gw.links_per_machine / pod.machine.ipus


@dataclass(frozen=True)
class CollectiveTime:
    bandwidth_s: float
    latency_s: float
    reduce_s: float

    @property
    def total_s(self) -> float:
        return self.bandwidth_s + self.latency_s + self.reduce_s


def ring_steps(pod: PodConfig, group: GroupShape, inside: int, algorithm: str) -> int:
    """Steps of an allreduce among `inside` IPUs of one ILD: 2(n-1) round one ring; "2d" on a contiguous group
    wider than a machine: reduce-scatter round each machine's ring of IPUs, then along the machines, all-gather
    back: 2((c-1) + (n/c-1)) steps, the same bytes."""
    cols = pod.machine.ipus
    if algorithm == "2d" and group.stride == 1 and inside > cols:
        return 2 * ((cols - 1) + (inside // cols - 1))
    return 2 * (inside - 1)


def allreduce(pod: PodConfig, group: GroupShape, nbytes: float, collectives: int = 1,
              algorithm: str = "ring") -> CollectiveTime:
    """`collectives` allreduces adding up to `nbytes` per rank: the bandwidth terms add up to one of nbytes, every
    collective pays the latency (alpha) terms."""
    if group.size <= 1 or nbytes <= 0:
        return CollectiveTime(0.0, 0.0, 0.0)
    k = group.ilds(pod)
    if group.stride > 1:
        if k == 1:
            return strided_allreduce(pod, group, nbytes, collectives)
        return strided_across_ilds(pod, group, nbytes, collectives)
    inside = group.size // k
    ipu, gw = pod.links.ipu_link, pod.links.gw_link
    bandwidth = latency = 0.0
    if inside > 1:
        rings = rings_per_ipu(pod, inside)
        bandwidth += 2 * (inside - 1) / inside * nbytes / (rings * ipu.bytes_per_s)
        latency += ring_steps(pod, group, inside, algorithm) * ipu.latency_s
    if k > 1:
        bandwidth += 2 * (k - 1) / k * (nbytes / inside) / gw_bytes_per_ipu(pod)
        latency += 2 * (k - 1) * gw.latency_s
    reduce = (group.size - 1) / group.size * nbytes * pod.ipu.reduce_s_per_byte
    return CollectiveTime(bandwidth, latency * collectives, reduce)


topology = topology_of


def strided_allreduce(pod: PodConfig, group: GroupShape, nbytes: float, collectives: int,
                      op: str = "allreduce") -> CollectiveTime:
    """All `stride` groups of `size` IPUs, `stride` apart, in the aligned block from IPU 0, allreducing `nbytes`
    each at once, or running `op`, one half of it (fabric/strided.py's schedule and prices, values of 4 bytes);
    every collective pays the steps' latency."""
    itemsize = 4
    seconds, latency = strided_allreduce_s(topology(pod), 0, group.size * group.stride, group.stride,
                                           round(nbytes / itemsize), itemsize, op)
    return CollectiveTime(seconds - latency, latency * collectives, 0.0)


def strided_across_ilds(pod: PodConfig, group: GroupShape, nbytes: float, collectives: int,
                        op: str = "allreduce") -> CollectiveTime:
    """Strided groups spanning k ILDs, hierarchically (walk33: priced as if each group had its ILD's rings to
    itself, r = 8 replicas on two Pod64s allreduced faster than r = 4 on one): inside every ILD the `stride` groups'
    members there reduce-scatter at once on the strided schedule, sharing links as strided_allreduce charges it;
    the n/inside shards are allreduced across the k ILDs over GW-Links, where every IPU of a machine sends its own
    shard at once (all `stride` groups: gw_bytes_per_ipu is an IPU's share of its machine's GW-Links); then the
    same strided all-gather inside every ILD. `op` "reduce_scatter" is the first half with the GW reduce-scatter,
    "all_gather" the GW all-gather and the last; the reduction's gamma on the GW shards in the first."""
    k = group.ilds(pod)
    inside = group.size // k
    local = GroupShape(inside, group.stride)
    halves = [strided_allreduce(pod, local, nbytes, collectives, half) if inside > 1 else CollectiveTime(0, 0, 0)
              for half in ("reduce_scatter", "all_gather")]
    shard = nbytes / inside
    gw = CollectiveTime((k - 1) / k * shard / gw_bytes_per_ipu(pod),
                        (k - 1) * pod.links.gw_link.latency_s * collectives, 0.0)
    scatter = CollectiveTime(halves[0].bandwidth_s + gw.bandwidth_s, halves[0].latency_s + gw.latency_s,
                             (k - 1) / k * shard * pod.ipu.reduce_s_per_byte)
    gather = CollectiveTime(halves[1].bandwidth_s + gw.bandwidth_s, halves[1].latency_s + gw.latency_s, 0.0)
    if op == "reduce_scatter":
        return scatter
    if op == "all_gather":
        return gather
    return CollectiveTime(scatter.bandwidth_s + gather.bandwidth_s, scatter.latency_s + gather.latency_s,
                          scatter.reduce_s)


def allreduce_half(pod: PodConfig, group: GroupShape, nbytes: float, op: str, collectives: int = 1,
                   algorithm: str = "ring") -> CollectiveTime:
    """One half of an allreduce of `nbytes` per rank (replicated tensor sharding): "reduce_scatter" leaves each
    rank the sum of its 1/size of them, "all_gather" gives every rank every rank's. The ring (and hierarchical)
    allreduce is one then the other on the same rings: half its steps and bytes each, the reduction in the
    reduce-scatter only; a strided group inside one ILD runs that half of the emulator's schedule."""
    if group.size <= 1 or nbytes <= 0:
        return CollectiveTime(0.0, 0.0, 0.0)
    if group.stride > 1:
        if group.ilds(pod) == 1:
            return strided_allreduce(pod, group, nbytes, collectives, op)
        return strided_across_ilds(pod, group, nbytes, collectives, op)
    whole = allreduce(pod, group, nbytes, collectives, algorithm)
    reduce = whole.reduce_s if op == "reduce_scatter" else 0.0
    return CollectiveTime(whole.bandwidth_s / 2, whole.latency_s / 2, reduce)


def all_gather(pod: PodConfig, size: int, nbytes: float) -> float:
    """A ring all-gather of `nbytes` (the whole result) among a contiguous group of `size` IPUs inside one ILD:
    (size-1) alpha + (size-1)/size n / (R B)."""
    if size <= 1 or nbytes <= 0:
        return 0.0
    ipu = pod.links.ipu_link
    rings = rings_per_ipu(pod, size)
    return (size - 1) * ipu.latency_s + (size - 1) / size * nbytes / (rings * ipu.bytes_per_s)


@lru_cache(maxsize=256)
def stage_sends(pod: PodConfig, t: int, p: int, numel: int, itemsize: int) -> tuple[tuple[float, ...], ...]:
    """(forward, back): per stage boundary s, the seconds of one send of a `numel`-element boundary tensor from
    stage s to s + 1, and from s + 1 back to s: each of the t shards sends its 1/t piece at once
    (fabric/transfer_schedule.py piece_sends, the step the emulator runs), priced on the routes it takes inside the
    first replica's block of t x p IPUs (every replica's block is an aligned copy of it): one IPU-Link hop where the
    two IPUs are linked, the shortest path's hops where not (t = 2 in a machine's ring of 4: IPU 0 to IPU 2 is 2
    hops), a GW-Link crossing where the stages sit in different Pod64s."""
    links = link_model(topology(pod))
    within = frozenset(range(t * p))

    def one(src: int, dst: int) -> float:
        step = piece_sends(range(src * t, (src + 1) * t), range(dst * t, (dst + 1) * t), numel, "scatter")
        return schedule_cost("send_recv", [step], links, itemsize, within).virtual_s

    return (tuple(one(s, s + 1) for s in range(p - 1)), tuple(one(s + 1, s) for s in range(p - 1)))
