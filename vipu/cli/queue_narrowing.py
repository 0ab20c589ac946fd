"""squeue's filters by job field: -n names, -p partitions (V-IPU allocations), -q QOS, -A accounts, -w nodes
(IPU-Machines), comma lists; a flag but -w not given is read from its SQUEUE_* variable, as squeue does (man squeue,
INPUT ENVIRONMENT VARIABLES). Each narrows the listing: a job is listed when it matches every filter given."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_selection import given
from vipu.partition.node_names import expand

if TYPE_CHECKING:
    from vipu.cli.queue_rows import JobRow


class Narrowing(NamedTuple):
    names: frozenset[str] | None = None
    partitions: frozenset[str] | None = None
    qos: frozenset[str] | None = None
    accounts: frozenset[str] | None = None
    nodes: frozenset[str] | None = None

    @property
    def needs(self) -> frozenset[str]:
        if self.nodes is not None:
            return frozenset({"placed", "nodes"})
        return frozenset({"placed"}) if self.partitions is not None else frozenset()

    def keeps(self, row: JobRow) -> bool:
        x = row.job
        return all(wanted is None or value in wanted for wanted, value in (
            (self.names, x.name), (self.qos, x.qos), (self.accounts, x.account))) and \
            (self.partitions is None or row.partition in self.partitions) and \
            (self.nodes is None or not self.nodes.isdisjoint(row.nodes))


def _read(values: list[str] | None, variable: str | None, flag: str, example: str) -> frozenset[str] | None:
    if not values and variable and os.environ.get(variable):
        values, flag = [os.environ[variable]], variable
    out = given(values, flag, example)
    return frozenset(out) if out else None


def narrowing(names: list[str] | None = None, partitions: list[str] | None = None, qos: list[str] | None = None,
              accounts: list[str] | None = None, nodes: list[str] | None = None) -> Narrowing:
    machines = _read(nodes, None, "-w/--nodelist", "IPU-Machine names (e.g. -w ag[00-01])")
    return Narrowing(
        _read(names, "SQUEUE_NAMES", "-n/--name", "job names (e.g. -n train,eval)"),
        _read(partitions, "SQUEUE_PARTITION", "-p/--partition", "V-IPU allocations (e.g. -p default)"),
        _read(qos, "SQUEUE_QOS", "-q/--qos", "QOS names (e.g. -q high,normal)"),
        _read(accounts, "SQUEUE_ACCOUNT", "-A/--account", "accounts (e.g. -A research)"),
        None if machines is None else frozenset(_nodes(machines)))


def _nodes(lists: frozenset[str]) -> list[str]:
    try:
        return [name for text in lists for name in expand(text)]
    except ValueError as e:
        fail("vipu", f"-w/--nodelist: {e}", BAD_INPUT)
