"""Collectives among the IPUs of a group: allreduce, reduce-scatter, all-gather, broadcast, send/recv.

Each builds its schedule from the group's plan (ring_plan.py: rings inside ILDs, GW rings across them), prices it
step by step (schedule_cost.py) and, given a transport, moves the data with exactly those steps. Without a transport
(virtual-time mode) give `nbytes` (and optionally `dtype`, default float16 as for gradients): only the schedule and
its cost are computed, which is how 256-IPU collectives are priced without data.

Algorithms (why: each is bandwidth-optimal on the links it uses; bounds.py gives the matching bound):
- inside one ILD, ring reduce-scatter then ring all-gather on every directed ring of the block at once (rings.py:
  4 rings over a whole torus Pod64, 2 over smaller blocks and mesh Pod16s, 1 for 2 IPUs);
- across ILDs, Graphcore's hierarchical scheme: reduce-scatter inside every ILD, allreduce of the shards over
  GW-Links (ring reduce-scatter + all-gather through the IPUs at the same position of each ILD), all-gather inside
  every ILD;
- broadcast: ring scatter from the root then all-gather (the same hierarchy across ILDs);
- send/recv: one transfer over the shortest IPU-Link path inside the group, or over GW-Links across ILDs.

Shared GW-Links: with a `ledger` (ledger.py) a collective gets bandwidth / (1 + other holders) on each GW-Link it
uses, and holds its own GW-Links under `ledger_key` (a fresh key if None) while it runs; if `ledger_key` is already
held (the caller registered it), that holding is used and not counted twice.

Fixed reduction order (so float results are reproducible bit for bit): element e of shard i, on the ring r that
carries it, is summed along that ring starting at the IPU after its owner: x[o+1] + x[o+2] + ... + x[o], o being
the owner's position on ring r (inside one ILD the owner is rank i). Across ILDs, each ILD first sums its own IPUs
that way (the owner is the IPU at rank i's position), and those partial sums are then added along the GW ring in
ILD order starting at the ILD after rank i's: P[j+1] + P[j+2] + ... + P[j]. Every addition is `local + incoming`,
which IEEE makes equal to `incoming + local`, so the order is a left fold in exactly that sequence.
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from vipu.errors import InvalidArgument
from vipu.fabric.group import Group
from vipu.fabric.known_schedules import Schedule, known
from vipu.fabric.ledger import GwLinkLedger, gw_links_of
from vipu.fabric.ring_plan import Plan, plan
from vipu.fabric.schedule_cost import CollectiveResult, schedule_cost
from vipu.fabric.transfer_schedule import Step, Transfer, all_gather_steps, reduce_scatter_steps, scatter_steps
from vipu.fabric.transport import Transport
from vipu.hardware.links import LinkId, LinkModel

_keys = itertools.count()


def allreduce(group: Group, name: str, transport: Transport | None = None, *, nbytes: int | None = None,
              dtype=None, ledger: GwLinkLedger | None = None, ledger_key=None) -> CollectiveResult:
    """Every IPU ends with the sum over the group of tensor `name`."""
    return _run("allreduce", group, name, transport, nbytes, dtype, ledger, ledger_key,
                lambda p: _reduce_scatter(p) + _all_gather(p))


def reduce_scatter(group: Group, name: str, transport: Transport | None = None, *, nbytes: int | None = None,
                   dtype=None, ledger: GwLinkLedger | None = None, ledger_key=None) -> CollectiveResult:
    """Rank i ends with the sum over the group in its shard of `name` (group.shard(numel, size, i)); its other
    elements then hold partial sums, unspecified."""
    return _run("reduce_scatter", group, name, transport, nbytes, dtype, ledger, ledger_key, _reduce_scatter)


def all_gather(group: Group, name: str, transport: Transport | None = None, *, nbytes: int | None = None,
               dtype=None, ledger: GwLinkLedger | None = None, ledger_key=None) -> CollectiveResult:
    """Every IPU ends with every rank's shard of `name` (rank i provides shard i; the rest is overwritten)."""
    return _run("all_gather", group, name, transport, nbytes, dtype, ledger, ledger_key, _all_gather)


def broadcast(group: Group, root: int, name: str, transport: Transport | None = None, *, nbytes: int | None = None,
              dtype=None, ledger: GwLinkLedger | None = None, ledger_key=None) -> CollectiveResult:
    """Every IPU ends with the root IPU's `name`."""
    group.rank(root)
    return _run("broadcast", group, name, transport, nbytes, dtype, ledger, ledger_key, lambda p: _broadcast(p, root),
                root)


def send_recv(group: Group, src: int, dst: int, name: str, transport: Transport | None = None, *,
              nbytes: int | None = None, dtype=None, ledger: GwLinkLedger | None = None,
              ledger_key=None) -> CollectiveResult:
    """IPU dst's `name` becomes a copy of IPU src's (both in the group)."""
    group.rank(src), group.rank(dst)
    if src == dst:
        raise InvalidArgument(f"send_recv from IPU {src} to itself moves nothing; give two different IPUs")
    return _run("send_recv", group, name, transport, nbytes, dtype, ledger, ledger_key,
                lambda p: [Step("send", (Transfer(src, dst, ((0, p.numel),), p.numel, False),))] if p.numel else [],
                (src, dst))


def _reduce_scatter(p: Plan) -> list[Step]:
    inside = reduce_scatter_steps(p.intra, "reduce-scatter ipu_link")
    return inside + reduce_scatter_steps(p.gw, "reduce-scatter gw_link")


def _all_gather(p: Plan) -> list[Step]:
    return all_gather_steps(p.gw, "all-gather gw_link") + all_gather_steps(p.intra, "all-gather ipu_link")


def _broadcast(p: Plan, root: int) -> list[Step]:
    topology = p.group.topology
    root_ild = topology.place(root).ild
    # inside the root's ILD: scatter from the root; across ILDs: each GW ring scatters from its root-ILD member
    home = [ring for ring in p.intra if topology.place(ring.ipus[0]).ild == root_ild]
    gw_roots = [next(ipu for ipu in ring.ipus if topology.place(ipu).ild == root_ild) for ring in p.gw]
    return (scatter_steps(home, [root] * len(home), "scatter ipu_link")
            + scatter_steps(p.gw, gw_roots, "scatter gw_link") + _all_gather(p))


def _spec(group: Group, name: str, transport: Transport | None, nbytes: int | None, dtype) -> tuple[int, np.dtype]:
    if transport is not None:
        return transport.spec(group.ipus[0], name)
    if nbytes is None or nbytes < 0:
        raise InvalidArgument(f"collective on {name!r} without a transport prices a schedule only: give nbytes >= 0")
    dtype = np.dtype(np.float16 if dtype is None else dtype)
    return nbytes // dtype.itemsize, dtype


def _run(op: str, group: Group, name: str, transport: Transport | None, nbytes: int | None, dtype,
         ledger: GwLinkLedger | None, ledger_key, build: Callable[[Plan], list[Step]], shape=()) -> CollectiveResult:
    """shape: what else, beside the op, the group and the tensor's size, the steps depend on (a broadcast's root)."""
    numel, dtype = _spec(group, name, transport, nbytes, dtype)
    links, within = group.links, (group.members if group.kind == "block" else None)
    if ledger is None:
        key = ("collective", op, shape, group.topology, group.ipus, group.kind, numel, dtype.itemsize)
        return move(name, known(key, lambda: price(op, build(plan(group, numel)), links, dtype.itemsize, within)),
                    transport)
    steps = build(plan(group, numel))
    key = ("collective", next(_keys)) if ledger_key is None else ledger_key
    users = lambda link: 1 + ledger.users(link, excluding=key)  # noqa: E731 - this one plus the others
    if key in ledger.holders():
        return execute(op, name, steps, links, dtype.itemsize, within, transport, users)
    with ledger.holding(key, gw_links_of(group)):
        return execute(op, name, steps, links, dtype.itemsize, within, transport, users)


def price(op: str, steps: list[Step], links: LinkModel, itemsize: int, within: frozenset[int] | None,
          users: Callable[[LinkId], int] | None = None) -> Schedule:
    """`steps` with their price on the links (schedule_cost.py)."""
    return Schedule(steps, schedule_cost(op, steps, links, itemsize, within, users))


def move(name: str, schedule: Schedule, transport: Transport | None) -> CollectiveResult:
    """Given a transport, move `name` with exactly the schedule's steps (checked for hazards the first time) in one
    run_steps call, and record the price there; returns the price."""
    if transport is not None:
        schedule.check()
        if schedule.moving:
            transport.run_steps(name, schedule.moving)
        transport.record(schedule.result)
    return schedule.result


def execute(op: str, name: str, steps: list[Step], links: LinkModel, itemsize: int, within: frozenset[int] | None,
            transport: Transport | None, users: Callable[[LinkId], int] | None = None) -> CollectiveResult:
    """Price `steps` on the links and, given a transport, move `name` with exactly those steps and record the cost
    there: how every collective here runs, and the training data path's own schedules (jobs/train/data_path.py)."""
    return move(name, price(op, steps, links, itemsize, within, users), transport)
