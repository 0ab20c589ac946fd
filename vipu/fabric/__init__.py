"""Collectives among the IPUs of a partition, moving real data and charging virtual time on the real links.

Pure domain (on the links of vipu/hardware/links.py): rings.py (directed rings through a block), group.py (who takes
part, the shard layout), ring_plan.py (which ring carries which elements), transfer_schedule.py (synchronous steps
of transfers), schedule_cost.py (alpha-beta per link, step by step), ledger.py (GW-Links shared between
collectives), bounds.py (the analytic bound), collectives.py (allreduce, reduce_scatter, all_gather, broadcast,
send_recv). Edges: transport.py (the Transport protocol), local_transport.py (LocalTransport, in-process) and
ray_transport.py (the machine actors). Importing this package does not import Ray.
"""

from vipu.fabric.bounds import Bound, allreduce_bound, topology_injection
from vipu.fabric.collectives import all_gather, allreduce, broadcast, reduce_scatter, send_recv
from vipu.fabric.group import Group, shard
from vipu.fabric.ledger import GwLinkLedger, gw_links_of
from vipu.fabric.local_transport import LocalTransport
from vipu.fabric.schedule_cost import CollectiveResult, PhaseCost
from vipu.fabric.transport import Transport

__all__ = [
    "Bound", "CollectiveResult", "Group", "GwLinkLedger", "LocalTransport", "PhaseCost", "Transport", "all_gather",
    "allreduce", "allreduce_bound", "broadcast", "gw_links_of", "reduce_scatter", "send_recv", "shard",
    "topology_injection",
]
