"""An agent's state, as Slurm's node's, in one place: the table of its edges and the functions every view reads
(the drain's answer, `vipu-admin get|list agents`, `vipu info -N` and `-R`, the admin lines of the log).

Stored is only what an admin said: drained or not (Agent.state, Slurm's DRAIN flag), and why (Agent.reason).
Shown is that and whether work still runs there: DRAINING while a partition holds some of its IPUs (their jobs
run on), DRAINED once none does, as slurmctld shows a drained node DRAINING until its last job ends. Why
worked out, not stored: the step from DRAINING to DRAINED is a partition's removal (a job's end), which no admin
command makes; a stored copy had to be kept in step by every path that removes one, and the views disagreed.

The edges: ONLINE to DRAINING (drained while a partition holds some of its IPUs) or to DRAINED (none does);
DRAINING to DRAINED (the last such partition removed: its job ended) or back to ONLINE (resumed); DRAINED to
ONLINE. Never DRAINED to DRAINING: no partition is placed on a drained agent (partitions.py refuses it)."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from vipu.partition.admin_records import Agent
from vipu.partition.partition_record import Partition
from vipu.partition.pod_state import PodState
from vipu.partition.rules import job_of_partition

ONLINE, DRAINING, DRAINED = "ONLINE", "DRAINING", "DRAINED"


def agent_state(drained: bool, in_use: bool) -> str:
    """ONLINE, or, drained, DRAINING while some of its IPUs are in use and DRAINED when none is."""
    if not drained:
        return ONLINE
    return DRAINING if in_use else DRAINED


def node_state(out_of_service: bool, held: bool, ipus: int, in_use: int, failed: int) -> str:
    """A machine as sinfo shows a node (long names): down when every IPU failed; else, when its agent is drained or
    it has none, the agent's state (draining while a partition holds some of its IPUs, whatever its others do: Slurm's
    drng is a drained node with jobs, mixed or not); else allocated, mixed or idle by its working IPUs.
    `in_use`: its IPUs a partition holds that have not failed."""
    if failed >= ipus:
        return "down"
    if out_of_service:
        return agent_state(True, held).lower()
    if not in_use:
        return "idle"
    return "allocated" if in_use + failed == ipus else "mixed"


def holders(partitions: Iterable[Partition], per_machine: int) -> dict[int, list[str]]:
    """The partitions holding some IPUs of each machine, by name, for the machines some partition holds."""
    held: dict[int, list[str]] = {}
    for p in partitions:
        for m in range(p.first_ipu // per_machine, (p.first_ipu + max(p.size, 1) - 1) // per_machine + 1):
            held.setdefault(m, []).append(p.name)
    return held


class AgentView(NamedTuple):
    agent: Agent
    state: str  # ONLINE, DRAINING or DRAINED
    partitions: tuple[str, ...]  # those holding its IPUs, by name: what a DRAINING agent waits for
    jobs: tuple[int, ...]  # the jobs of those that are a job's (slurm_<id>)


def agent_views(pod: PodState, agents: Iterable[Agent]) -> list[AgentView]:
    """Each agent with its state and what holds its IPUs. The partitions are visited once, not once an agent: a
    listing of the largest Pod's 16,384 agents."""
    on_machine = holders(pod.partitions.values(), pod.pod.machine.ipus)
    views = []
    for agent in agents:
        held = tuple(sorted(on_machine.get(agent.machine, ())))
        views.append(AgentView(agent, agent_state(agent.state != ONLINE, bool(held)), held, jobs_of(held)))
    return views


def jobs_of(partitions: Iterable[str]) -> tuple[int, ...]:
    """The jobs whose partitions (slurm_<id>) these are, in order."""
    return tuple(sorted(j for j in map(job_of_partition, partitions) if j is not None))


def agent_view(pod: PodState, agent: Agent) -> AgentView:
    return agent_views(pod, [agent])[0]
