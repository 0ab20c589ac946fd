"""Each IPU's state (idle, allocated, completing, draining, drained, failed) and the partition that holds it, as `vipu
list ipus`, `vipu info`, `vipu top` and the metrics show them; each machine's IPUs counted by state, as sinfo's nodes
(`vipu info -N/-s`, `vipu top` on a big Pod, the node lists of the queue); and the nodes an allocation cannot use now,
which a job waiting with ReqNodeNotAvail names."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, NamedTuple

from vipu.errors import FailedPrecondition
from vipu.partition.admin_records import DEFAULT_ALLOCATION, Reason
from vipu.partition.agent_states import node_state
from vipu.partition.ipu_states import IPU_STATES
from vipu.partition.node_names import hostlist, machine_name
from vipu.partition.placement import ipus_in
from vipu.partition.pod_state import PodState


class IpuStatus(NamedTuple):  # a NamedTuple: 65,536 of them are made for one listing of the largest Pod
    ipu: int
    machine: int
    index: int
    ild: int
    agent: str | None
    # idle | allocated | completing (its partition's run is still torn down: completing_mask) | draining (its agent is
    # drained or missing, a partition holds it) | drained (the same, in no partition) | failed
    state: str
    partition: str | None

    @property
    def working(self) -> bool:
        """Whether the IPU may be doing work: in a partition and not failed. Its machine keeps reporting the last
        step it ran after the job has ended, so telemetry reads an IPU that is not working as idle."""
        return self.partition is not None and self.state != "failed"


def completing_mask(state: PodState, cleaning_mask: int) -> int:
    """The IPUs shown completing, as a mask (bit i: IPU i), made of PodState's masks: its callers count it by
    IPU-Link domain in bit windows (QueueView.info) or list it (ipus_in). Those a partition holds whose run is still
    torn down (`cleaning_mask`, the scheduler's teardowns: Slurm's completing jobs, their programs given KillWait),
    but not failed ones nor a drained agent's, which show draining, as slurmctld shows a drained node with a
    completing job DRAINING. The one rule: every IPU view, and through their counts sinfo's comp node
    (agent_states.node_state), read it."""
    return cleaning_mask & state.used_mask & ~state.draining_mask & ~state.failed_mask


def _not_idle(state: PodState, cleaning_mask: int = 0) -> tuple[dict[int, str], dict[int, str]]:
    """(the partition holding each IPU a partition holds, the state of each IPU that is not idle)."""
    owner = {ipu: p.name for p in state.partitions.values() for ipu in p.ipus}
    # draining before allocated: a job still running on a drained agent's IPUs must show the drain (Slurm's
    # drng), and in a state of its own, so what counts IPUs in use can add it (it holds a job) and what
    # counts drained ones is not told about the work; failed before all. completing_mask leaves out both already
    kinds = dict.fromkeys(owner, "allocated")
    kinds.update(dict.fromkeys(ipus_in(completing_mask(state, cleaning_mask)), "completing"))
    kinds.update(dict.fromkeys(ipus_in(state.drained_mask), "drained"))
    kinds.update(dict.fromkeys(ipus_in(state.draining_mask), "draining"))
    kinds.update(dict.fromkeys(state.failed_ipus, "failed"))
    return owner, kinds


def not_failed(state: PodState, working: list[int], named: list[int],
               cleaning_mask: int = 0) -> FailedPrecondition:
    """The refusal of a repair of `working`, IPUs of `named` that are not failed: repair undoes a failure, as
    resume undoes a drain (agent_states.not_drained). Each named with its state as `vipu list ipus` shows it
    (`cleaning_mask` as completing_mask takes it); the fix: the failed ones alone, and for a drained machine's
    IPUs, the resume of its agent, which repair is not."""
    _, kinds = _not_idle(state, cleaning_mask)
    one = len(working) == 1
    each = ", ".join(f"{ipu} ({kinds.get(ipu, 'idle')})" for ipu in working)
    text = (f"IPU{'' if one else 's'} {each} {'is' if one else 'are'} not failed: repair undoes a failure (`vipu-admin"
            " fail ipus`, or a machine or IPU-Link lost), so there is nothing to repair")
    failed = [ipu for ipu in dict.fromkeys(named) if ipu in state.failed_ipus]
    if failed:
        text += ("; none was repaired: repair the failed ones alone, `vipu-admin repair ipus"
                 f" {' '.join(map(str, failed))}`")
    agents = state.agent_of_machine()
    drained = {agents[ipu // state.pod.machine.ipus].name for ipu in working
               if kinds.get(ipu) in ("drained", "draining") and ipu // state.pod.machine.ipus in agents}
    if drained:
        text += f"; a drained agent's IPUs come back with `vipu-admin resume agent {hostlist(drained)}`"
    return FailedPrecondition(text, resource=("ipu", " ".join(map(str, working))))


def ipu_statuses(state: PodState, cleaning_mask: int = 0) -> list[IpuStatus]:
    """Each IPU's state and the partition holding it; `cleaning_mask` as completing_mask takes it."""
    owner, kinds = _not_idle(state, cleaning_mask)
    agents = {machine: agent.name for machine, agent in state.agent_of_machine().items()}
    per_machine, per_ild = state.pod.machine.ipus, state.pod.machines_per_ild
    statuses = []
    for ipu in range(state.pod.ipus):
        machine, index = divmod(ipu, per_machine)  # topology.place, inlined
        partition = owner.get(ipu)
        kind = kinds.get(ipu, "idle")
        statuses.append(IpuStatus(ipu, machine, index, machine // per_ild, agents.get(machine), kind, partition))
    return statuses


class MachineStatus(NamedTuple):
    """An IPU-Machine as sinfo shows a node: its name and its IPUs counted by state (IpuStatus.state's)."""

    machine: int
    ild: int
    agent: str | None
    name: str  # its agent's, else machineNN
    ipus: int
    idle: int
    allocated: int
    draining: int
    drained: int
    failed: int
    partitions: tuple[str, ...] = ()  # holding its IPUs, by name
    working: tuple[int, ...] = ()  # its IPUs that may be doing work (IpuStatus.working), for their utilisation
    state: str = "idle"  # as sinfo's node: agent_states.node_state
    reason: Reason | None = None  # why it is out of service (machine_reason)
    completing: int = 0  # its IPUs completing (completing_mask): in use, their run torn down


_KINDS = IPU_STATES[1:]  # those _not_idle sets


def machine_statuses(state: PodState, machines: Iterable[int] | None = None,
                     cleaning_mask: int = 0) -> list[MachineStatus]:
    """These machines (None: every one), in order, each with its IPUs counted by state as ipu_statuses() sets it.
    Only IPUs that are not idle are visited: an idle 65,536-IPU Pod is 16,384 rows, not 65,536 statuses.
    `cleaning_mask`: the IPUs of runs still torn down, as completing_mask takes it."""
    return _machine_rows(state, machines, *_not_idle(state, cleaning_mask))


def _machine_rows(state: PodState, machines: Iterable[int] | None, owner: dict[int, str],
                  busy: dict[int, str]) -> list[MachineStatus]:
    """machine_statuses() from _not_idle()'s answer."""
    per_machine, per_ild, total = state.pod.machine.ipus, state.pod.machines_per_ild, state.pod.machines
    counts: dict[int, list[int]] = {}
    for ipu, kind in busy.items():
        counts.setdefault(ipu // per_machine, [0] * len(_KINDS))[_KINDS.index(kind)] += 1
    agents = {machine: agent.name for machine, agent in state.agent_of_machine().items()}
    reasons = machine_reasons(state)
    rows = []
    for m in range(total) if machines is None else sorted(set(machines)):
        allocated, completing, draining, drained, failed = counts.get(m) or (0, 0, 0, 0, 0)
        agent = agents.get(m)
        held: tuple[str, ...] = ()
        working: tuple[int, ...] = ()
        if allocated or completing or draining or failed:  # only then can a partition hold one of its IPUs
            mine = range(m * per_machine, (m + 1) * per_machine)
            held = tuple(sorted({owner[i] for i in mine if i in owner}))
            working = tuple(i for i in mine if i in owner and busy[i] != "failed")
        state = node_state(draining + drained > 0, bool(held), per_machine, allocated + completing + draining, failed,
                           completing)
        idle = per_machine - allocated - completing - draining - drained - failed
        rows.append(MachineStatus(m, m // per_ild, agent, agent or machine_name(m, total), per_machine, idle,
                                  allocated, draining, drained, failed, held, working, state, reasons.get(m),
                                  completing))
    return rows


def machine_state_counts(state: PodState, cleaning_mask: int = 0) -> Counter:
    """The machines in each state sinfo shows a node in (idle, allocated, mixed, completing, draining, drained,
    down), as machine_statuses sets it: vipu_machines{state}, as `vipu info -N` shows them. Only the machines with an
    IPU that is not idle are visited (a drained agent's or a missing one's IPUs are not idle); the rest are idle."""
    per_machine = state.pod.machine.ipus
    owner, busy = _not_idle(state, cleaning_mask)  # (worked out once a scrape: the rows below read it too)
    touched = {ipu // per_machine for ipu in busy}
    counts = Counter(s.state for s in _machine_rows(state, touched, owner, busy))
    counts["idle"] += state.pod.machines - len(touched)
    return counts


def completing_nodes(state: PodState, cleaning_mask: int) -> list[str]:
    """The machines sinfo shows comp: those where runs are torn down (`cleaning_mask`, as machine_statuses takes
    it) and nothing outranks that (alloc, drng, down)."""
    machines = {ipu // state.pod.machine.ipus for ipu in ipus_in(cleaning_mask)}
    if not machines:
        return []
    return [s.name for s in machine_statuses(state, machines, cleaning_mask) if s.state == "completing"]


def machine_reasons(state: PodState) -> dict[int, Reason]:
    """Why each machine out of service is (sinfo -R's reason, user and time): its agent's drain, else the latest
    failure of its IPUs. A machine drained before reasons were kept, or without an agent, has none."""
    per_machine = state.pod.machine.ipus
    reasons: dict[int, Reason] = {}
    for failure in sorted(state.ipu_failures.values(), key=lambda f: (f.created_at, f.ipu)):
        if failure.reason is not None:
            reasons[failure.ipu // per_machine] = failure.reason
    for agent in state.agents.values():
        if agent.state != "ONLINE" and agent.reason is not None:
            reasons[agent.machine] = agent.reason
    return reasons


def machines_spanned(blocks: Iterable[tuple[int, int]], per_machine: int) -> set[int]:
    """The machines some blocks of IPUs (first IPU, IPUs) span."""
    return {m for first, size in blocks
            for m in range(first // per_machine, (first + max(size, 1) - 1) // per_machine + 1)}


def unavailable_nodes(state: PodState, allocation: str) -> list[str]:
    """The nodes of an allocation that take no new work, by name in machine order (what Slurm lists after
    ReqNodeNotAvail as UnavailableNodes): its machines without an agent (the default allocation's), its drained
    agents' and those with a failed IPU; none for an allocation that is gone."""
    if allocation != DEFAULT_ALLOCATION and allocation not in state.allocations:
        return []
    vacant, drained, failed = state.out_of_service(allocation)
    per_machine = state.pod.machine.ipus
    machines = {*vacant, *(state.agents[a].machine for a in drained), *(i // per_machine for i in failed)}
    agents = state.agent_of_machine()
    return [agents[m].name if m in agents else machine_name(m, state.pod.machines) for m in sorted(machines)]
