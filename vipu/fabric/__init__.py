"""Collectives among the IPUs of a partition, moving real data and charging virtual time on the real links.

Pure domain (on the links of vipu/hardware/links.py): rings.py (directed rings through a block), group.py (who takes
part, the shard layout), ring_plan.py (which ring carries which elements), transfer_schedule.py (synchronous steps
of transfers), schedule_cost.py (alpha-beta per link, step by step), ledger.py (GW-Links shared between
collectives), bounds.py (the analytic bound), collectives.py (allreduce, reduce_scatter, all_gather, broadcast,
send_recv). Edges: transport.py (the Transport protocol), local_transport.py (LocalTransport, in-process) and
ray_transport.py (the machine actors). Importing this package imports neither Ray nor numpy: its names load
when first used, so the planner's cost formulas (schedule_cost.py and others) work where numpy is not installed
(the `vipu` CLI alone).
"""

import importlib

_WHERE = {
    "Bound": "bounds", "allreduce_bound": "bounds", "topology_injection": "bounds",
    "all_gather": "collectives", "allreduce": "collectives", "broadcast": "collectives",
    "reduce_scatter": "collectives", "send_recv": "collectives",
    "Group": "group", "shard": "group",
    "GwLinkLedger": "ledger", "gw_links_of": "ledger",
    "LocalTransport": "local_transport",
    "CollectiveResult": "schedule_cost", "PhaseCost": "schedule_cost",
    "Transport": "transport",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value
