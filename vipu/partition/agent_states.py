"""An agent's state, as Slurm's node's, in one place: the table of its edges and the functions every view reads
(the drain's answer, `vipu-admin get|list agents`, `vipu info -N` and `-R`, the admin lines of the log).

Stored is only what an admin said: drained or not (Agent.state, Slurm's DRAIN flag), and why (Agent.reason).
Shown is that and whether work still runs there: DRAINING while a partition holds some of its IPUs (their jobs
run on), DRAINED once none does, as slurmctld shows a drained node DRAINING until its last job ends. Why
worked out, not stored: the step from DRAINING to DRAINED is a partition's removal (a job's end), which no admin
command makes; a stored copy had to be kept in step by every path that removes one, and the views disagreed.

The edges: ONLINE to DRAINING (drained while a partition holds some of its IPUs) or to DRAINED (none does);
DRAINING to DRAINED (the last such partition removed: its job ended) or back to ONLINE (resumed); DRAINED to
ONLINE. Never DRAINED to DRAINING: no partition is placed on a drained agent (partitions.py refuses it). Never
ONLINE to ONLINE: a resume of an agent not drained is refused (not_drained), as scontrol refuses State=RESUME of a
node that is not drained or down ("Invalid node state specified"): logged as a resume, it would tell of a change
that was none."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from vipu.errors import FailedPrecondition, NotFound
from vipu.partition.admin_records import Agent
from vipu.partition.node_names import hostlist
from vipu.partition.partition_record import Partition
from vipu.partition.pod_state import PodState, missing
from vipu.partition.rules import job_of_partition

ONLINE, DRAINING, DRAINED = "ONLINE", "DRAINING", "DRAINED"


def agent_state(drained: bool, in_use: bool) -> str:
    """ONLINE, or, drained, DRAINING while some of its IPUs are in use and DRAINED when none is."""
    if not drained:
        return ONLINE
    return DRAINING if in_use else DRAINED


NODE_STATES = ("idle", "allocated", "mixed", "completing", "draining", "drained", "down")  # what node_state gives


def node_state(out_of_service: bool, held: bool, ipus: int, in_use: int, failed: int, completing: int = 0) -> str:
    """A machine as sinfo shows a node (long names), in slurmctld's order: down when every IPU failed; else, when its
    agent is drained or it has none, the agent's state (draining while a partition holds some of its IPUs, whatever
    its others do: Slurm's drng is a drained node with jobs, completing or mixed or not); allocated when running
    jobs hold every IPU that has not failed; completing while a stopped run is torn down on some (its program
    given KillWait: squeue's CG), as sinfo's comp, which only alloc outranks; mixed when some IPUs are in use or
    failed and others idle; else idle. `in_use`: its IPUs a partition holds that have not failed; `completing`:
    those of them a run being torn down holds.

    Why a failed IPU makes mixed, not idle: the machine is not whole (a job of all its IPUs cannot start there, and
    sinfo -R lists why), nor out of service (its other IPUs take partitions: drain would say they do not, and a
    resume would be refused as the agent is not drained); mix is sinfo's state for a node partly available.
    Slurm itself has no partial failure: a node registering fewer GPUs than configured is drained whole."""
    if failed >= ipus:
        return "down"
    if out_of_service:
        return agent_state(True, held).lower()
    running = in_use - completing
    if running and running + failed == ipus:
        return "allocated"
    if completing:
        return "completing"
    return "mixed" if running or failed else "idle"


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


def unknown_agents(unknown: list[str], named: list[str]) -> NotFound:
    """The refusal of a drain or resume naming agents that do not exist: all of them, and how to list the agents."""
    if len(named) == 1:
        return missing("agent", unknown[0])
    listed = hostlist(unknown)
    what = f"agent {listed} does" if len(unknown) == 1 else f"agents {listed} do"
    return NotFound(f"{what} not exist (of the {len(named)} named), so none was changed; `vipu-admin list agents`"
                    " shows the ones that do", resource=("agent", listed))


def not_drained(pod: PodState, online: list[str], named: list[str]) -> FailedPrecondition:
    """The refusal of a resume of `online`, agents of `named` that are not drained: resume undoes a drain. The fix:
    the drained ones alone; for a machine whose IPUs failed (down, or mix), their repair, which resume is not."""
    one = len(online) == 1
    text = (f"agent{'' if one else 's'} {hostlist(online)} {'is' if one else 'are'} ONLINE, not drained: resume"
            " undoes a drain (`vipu-admin drain agent`), so there is nothing to resume")
    if len(named) > 1:
        not_yet = set(online)
        drained = [n for n in named if n not in not_yet]
        text += "; none was resumed" + (f": resume the drained ones alone, `vipu-admin resume agent"
                                         f" {hostlist(drained)}`" if drained else "")
    per_machine = pod.pod.machine.ipus
    machines = {pod.agents[n].machine for n in online}
    failed = sorted(i for i in pod.failed_ipus if i // per_machine in machines)
    if failed:
        text += f"; failed IPUs come back with `vipu-admin repair ipus {' '.join(map(str, failed))}`"
    return FailedPrecondition(text, resource=("agent", hostlist(online)))
