"""The policy registry: a scheduling policy is chosen by name in the SchedulerConfig (`policy: backfill`).

Why a registry of small files: each policy is a queue order (its ORDER, which the Scheduler keeps sorted
incrementally, like kube-scheduler's QueueSort) plus one mode of the shared walk (engine.py), so adding one for
research is a ten-line file and a line here. A researcher's own file, outside the package, is loaded the same way
(`policy_file` in the config, `--policy-file` on the command line: policy_file.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.errors import InvalidArgument
from vipu.scheduler.policies import backfill, fifo, priority, sjf
from vipu.scheduler.policies.base import Policy
from vipu.scheduler.policies.policy_file import GuardedPolicy, load_policy_file

if TYPE_CHECKING:
    from vipu.scheduler.config import SchedulerConfig

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


def chosen(config: SchedulerConfig) -> tuple[Policy, str]:
    """The policy a Scheduler with `config` runs, and the order its queue is kept in: the policy file's, guarded by
    the built-in `policy`, if the config names one (policy_file.py), else the built-in one's."""
    if config.policy_file:
        loaded = load_policy_file(config.policy_file)
        return GuardedPolicy(loaded, get_policy(config.policy), config.policy), loaded.order
    return get_policy(config.policy), QUEUE_ORDER[config.policy]
