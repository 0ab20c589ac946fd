"""The policy registry: a scheduling policy is chosen by name in the SchedulerConfig (`policy: backfill`).

Why a registry of small files: each policy is a queue order (its ORDER, which the Scheduler keeps sorted
incrementally, like kube-scheduler's QueueSort) plus one mode of the shared walk (engine.py), so adding one for
research is a ten-line file and a line here.
"""

from __future__ import annotations

from vipu.errors import InvalidArgument
from vipu.scheduler.policies import backfill, fifo, priority, sjf
from vipu.scheduler.policies.base import Policy

POLICIES: dict[str, Policy] = {
    "fifo": fifo.schedule,
    "priority": priority.schedule,
    "backfill": backfill.schedule,
    "sjf": sjf.schedule,
}


QUEUE_ORDER: dict[str, str] = {
    "fifo": fifo.ORDER,
    "priority": priority.ORDER,
    "backfill": backfill.ORDER,
    "sjf": sjf.ORDER,
}


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise InvalidArgument(f"policy {name!r} is unknown; use one of {', '.join(sorted(POLICIES))}") from None
