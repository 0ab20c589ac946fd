"""Rings for strided groups: the r replicas of each (stage, shard) position of a t x p x r layout, t p IPUs apart.

Such a group is not an aligned block, so it has no ring of its own in rings.py. Which IPUs form its ring, and the
hops between them, come from the IPU-Link grid (hardware.md: rings over the IPU-Link torus):
- the ring visits the group's members in the order the enclosing block's Hamiltonian ring (topology.ring) visits
  them: neighbours on the grid stay neighbours on the ring. Replica order would not: on a machine's ring of 4 IPUs,
  replicas 0, 1 at stride 2 are IPUs 0 and 2 (2 hops), and replica 1 to 2 is IPU 2 to IPU 4 (3 hops);
- each step of the ring goes over the shortest IPU-Link path inside the partition (hardware/links.py), so a member
  that is not the next one's neighbour pays one IPU-Link latency per hop;
- all the groups run their steps at once (they reduce the gradients of every stage and shard together), and every
  link direction carrying several groups' transfers in one step shares its bandwidth among them (schedule_cost.py).
So a column of a torus Pod64 (stride 4) is a 1-hop ring of its own, as a contiguous block's ring is; stride 2
inside a machine, or replica pairs two machines apart on a mesh, are not, and pay for it in hops and shared links.

For more than 2 members each group runs the ring both ways, each direction carrying half of every shard, as the
fabric does inside a block. The emulator's data path (jobs/train/data_path.py) and the planner
(jobs/collective_time.py) both build their schedule here, so the two price the same transfers on the same routes.
"""

from __future__ import annotations

from functools import lru_cache
from collections.abc import Sequence

from vipu.fabric.group import shard, split
from vipu.fabric.ring_plan import Ring
from vipu.fabric.schedule_cost import CollectiveResult, schedule_cost
from vipu.fabric.transfer_schedule import Step, all_gather_steps, reduce_scatter_steps
from vipu.hardware.links import link_model
from vipu.hardware.topology import Topology


def ring_order(topology: Topology, ipus: Sequence[int], first: int, size: int) -> tuple[int, ...]:
    """The members `ipus` of the aligned block [first, first+size) in the order its Hamiltonian ring visits them."""
    position = {ipu: i for i, ipu in enumerate(topology.ring(first, size))}
    return tuple(sorted(ipus, key=position.__getitem__))


def group_rings(topology: Topology, groups: Sequence[Sequence[int]], numels: Sequence[int], first: int,
                size: int) -> list[Ring]:
    """The directed rings of every group (each group's members ordered on the grid; both ways for more than 2),
    group g reducing numels[g] elements, shards owned as the fabric's: rank i of a group (its i-th IPU as given)
    owns shard i."""
    rings = []
    for ipus, numel in zip(groups, numels, strict=True):
        ordered = ring_order(topology, ipus, first, size)
        directions = [ordered] if len(ordered) <= 2 else [ordered, (ordered[0], *ordered[:0:-1])]
        pieces = [split(shard(numel, len(ipus), i), len(directions)) for i in range(len(ipus))]
        for d, order in enumerate(directions):
            rings.append(Ring.of(order, {ipu: [pieces[i][d]] for i, ipu in enumerate(ipus)}))
    return rings


def allreduce_steps(rings: Sequence[Ring]) -> list[Step]:
    return reduce_scatter_steps(rings, "reduce-scatter") + all_gather_steps(rings, "all-gather")


# the steps of each collective the strided groups run: the allreduce, or one of its halves (replicated tensor
# sharding; a program's reduce-scatter and all-gather): jobs/train/data_path.py on_groups
STEPS = {"allreduce": allreduce_steps,
         "reduce_scatter": lambda rings: reduce_scatter_steps(rings, "reduce-scatter"),
         "all_gather": lambda rings: all_gather_steps(rings, "all-gather")}


def strided_groups(first: int, size: int, stride: int) -> list[tuple[int, ...]]:
    """The `stride` groups of size // stride IPUs, stride apart, that tile the block [first, first+size)."""
    return [tuple(first + offset + j * stride for j in range(size // stride)) for offset in range(stride)]


@lru_cache(maxsize=512)
def _priced(topology: Topology, first: int, size: int, stride: int, numel: int, itemsize: int,
            op: str) -> tuple[float, float]:
    rings = group_rings(topology, strided_groups(first, size, stride), [numel] * stride, first, size)
    steps = STEPS[op](rings)
    links = link_model(topology)
    within = frozenset(range(first, first + size))
    result = schedule_cost(op, steps, links, itemsize, within)
    latency = sum(max(links.route(t.src, t.dst, within).alpha_s for t in step.transfers)
                  for step in steps if step.transfers)
    return result.virtual_s, latency


def strided_allreduce_s(topology: Topology, first: int, size: int, stride: int, numel: int,
                        itemsize: int, op: str = "allreduce") -> tuple[float, float]:
    """Virtual-time path (no data): every strided group of the block allreducing `numel` elements at once (or,
    with `op` "reduce_scatter" or "all_gather", running that half of it). Returns (seconds, the latency part of
    them: each step's longest route alpha), from the same schedule and cost model the data path runs."""
    return _priced(topology, first, size, stride, int(numel), int(itemsize), op)


def price(topology: Topology, groups: Sequence[Sequence[int]], numel: int, itemsize: int, first: int,
          size: int) -> CollectiveResult:
    """The schedule's cost without moving data (tests and benchmarks), every group reducing `numel` elements."""
    steps = allreduce_steps(group_rings(topology, groups, [numel] * len(groups), first, size))
    return schedule_cost("allreduce", steps, link_model(topology), itemsize, frozenset(range(first, first + size)))
