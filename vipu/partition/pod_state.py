"""What the controller knows at one moment: the Pod, its agents, clusters, allocations, users and partitions.

Plain data plus the derived views placement needs (which IPUs are used, failed, inside an allocation). The
operations that change it live in admin.py and partitions.py; each writes through a Journal before it changes
anything here, so memory never holds what the store does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol

from pydantic import BaseModel

from vipu.errors import NotFound
from vipu.hardware.pod import PodConfig
from vipu.hardware.topology import Topology
from vipu.partition.admin_records import DEFAULT_ALLOCATION, Agent, Allocation, Cluster, IpuFailure, User
from vipu.partition.node_names import machine_name, natural_key
from vipu.partition.partition_record import Partition
from vipu.partition.placement import mask_of


class Journal(Protocol):
    """Durable storage for records; commit is all-or-nothing and returns only once the change is durable."""

    def commit(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None: ...


class NoJournal:
    """For trace replay and domain tests, where nothing needs to outlive the process."""

    def commit(self, puts, deletes) -> None:
        return None


KINDS: dict[str, type[BaseModel]] = {
    "agent": Agent,
    "cluster": Cluster,
    "allocation": Allocation,
    "user": User,
    "partition": Partition,
    "ipu_failure": IpuFailure,
}


def missing(kind: str, name: str) -> NotFound:
    """The error for a record that does not exist (or, with --secure, that the caller may not see: the same words)."""
    listing = "vipu list partitions" if kind == "partition" else f"vipu-admin list {kind}s"
    return NotFound(f"{kind} {name!r} does not exist; `{listing}` shows the ones that do", resource=(kind, name))


@dataclass
class PodState:
    pod: PodConfig
    topology: Topology
    agents: dict[str, Agent] = field(default_factory=dict)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    allocations: dict[str, Allocation] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    partitions: dict[str, Partition] = field(default_factory=dict)
    ipu_failures: dict[str, IpuFailure] = field(default_factory=dict)
    used_mask: int = 0  # bit i set: IPU i belongs to a partition; kept in step by partitions.py
    _eligible: dict[str, int] = field(default_factory=dict)  # allocation -> IPUs of its online agents
    _capacity: dict[str, int] = field(default_factory=dict)  # allocation -> capacity_mask()

    def read_copy(self) -> PodState:
        """A copy for reads, taken under the caller's lock: its tables copied (records are immutable, so shared)."""
        return PodState(self.pod, self.topology, dict(self.agents), dict(self.clusters), dict(self.allocations),
                        dict(self.users), dict(self.partitions), dict(self.ipu_failures), self.used_mask,
                        dict(self._eligible), dict(self._capacity))

    @property
    def failed_ipus(self) -> set[int]:
        return {f.ipu for f in self.ipu_failures.values()}

    @property
    def failed_mask(self) -> int:
        return mask_of(f.ipu for f in self.ipu_failures.values())

    def table(self, kind: str) -> dict:
        return getattr(self, kind + "s")  # "agent" -> self.agents, "ipu_failure" -> self.ipu_failures

    def get(self, kind: str, name: str):
        try:
            return self.table(kind)[name]
        except KeyError:
            raise missing(kind, name) from None

    def apply(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None:
        for kind, name, record in puts:
            self.table(kind)[name] = record
        for kind, name in deletes:
            self.table(kind).pop(name, None)
        if any(kind not in ("partition", "ipu_failure") for kind, *_ in (*puts, *deletes)):
            self._eligible.clear()  # agents or allocations changed
            self._capacity.clear()

    def agent_of_machine(self) -> dict[int, Agent]:
        return {agent.machine: agent for agent in self.agents.values()}

    def node_names(self) -> dict[str, int]:
        """Each machine's name as a node (`vipu info -N`): its agent's, or machineNN for one without an agent."""
        names = {machine_name(m, self.pod.machines): m for m in range(self.pod.machines)}
        for agent in self.agents.values():
            del names[machine_name(agent.machine, self.pod.machines)]
            names[agent.name] = agent.machine
        return names

    def allocation_agents(self, allocation: str) -> list[str]:
        """The agents of an allocation; 'default' is every agent of a cluster that no named allocation holds (as in
        V-IPU, a partition is carved from a cluster: an agent in none serves no partition)."""
        if allocation == DEFAULT_ALLOCATION:
            clustered = {a for cluster in self.clusters.values() for a in cluster.agents}
            taken = {a for alloc in self.allocations.values() for a in alloc.agents}
            return sorted((name for name in self.agents if name in clustered and name not in taken), key=natural_key)
        return list(self.get("allocation", allocation).agents)

    def eligible_mask(self, allocation: str) -> int:
        """IPUs of the allocation's online agents, used or not."""
        eligible = self._eligible.get(allocation)
        if eligible is None:
            eligible = self._eligible[allocation] = self.topology.machines_mask(
                self.agents[name].machine for name in self.allocation_agents(allocation)
                if self.agents[name].state == "ONLINE")
        return eligible

    def capacity_mask(self, allocation: str) -> int:
        """IPUs of every agent of the allocation, drained or not, used or not, failed or not, and for the default
        allocation those of its machines without an agent: the most a partition of it could ever get (drains end,
        failures are repaired, partitions are removed, and an agent created on a machine joins its domain's cluster
        and so the default allocation: admin.py)."""
        capacity = self._capacity.get(allocation)
        if capacity is None:  # kept until agents or allocations change: every partition create asks
            machines = [self.agents[name].machine for name in self.allocation_agents(allocation)]
            if allocation == DEFAULT_ALLOCATION:
                machines += self.machines_without_agent()
            capacity = self._capacity[allocation] = self.topology.machines_mask(machines)
        return capacity

    def machines_without_agent(self) -> list[int]:
        """Machines of a cluster's IPU-Link domains that have no agent (removed): an agent created there joins the
        default allocation."""
        per_ild = self.pod.machines_per_ild
        ilds = {self.agents[a].machine // per_ild for c in self.clusters.values() for a in c.agents if a in self.agents}
        taken = self.agent_of_machine()
        return [m for m in range(self.pod.machines) if m not in taken and m // per_ild in ilds]

    def out_of_service(self, allocation: str) -> tuple[list[int], list[str], list[int]]:
        """What keeps the allocation's IPUs from new partitions, each for an admin to end: machines without an agent
        (default allocation only), drained agents, failed IPUs."""
        vacant = self.machines_without_agent() if allocation == DEFAULT_ALLOCATION else []
        drained = sorted(a for a in self.allocation_agents(allocation) if self.agents[a].state != "ONLINE")
        capacity = self.capacity_mask(allocation)
        return vacant, drained, sorted(i for i in self.failed_ipus if capacity >> i & 1)

    def usable_mask(self, allocation: str) -> int:
        """IPUs a new partition in `allocation` may use: on its agents, not failed, not drained, not in use."""
        return self.eligible_mask(allocation) & ~self.used_mask & ~self.failed_mask

    def _allowed(self) -> dict[str, int]:
        return {name: self.eligible_mask(name) for name in (DEFAULT_ALLOCATION, *self.allocations)}

    @staticmethod
    def _union(masks) -> int:
        out = 0
        for mask in masks:
            out |= mask
        return out

    @property
    def _out_of_service_mask(self) -> int:
        """Healthy IPUs whose machine's agent is drained or missing: out of service for new partitions."""
        online = self._union(self._allowed().values())
        return ((1 << self.pod.ipus) - 1) & ~online & ~self.failed_mask

    @property
    def drained_mask(self) -> int:
        """Out-of-service IPUs in no partition (Slurm's drained): idle, and taking no new work."""
        return self._out_of_service_mask & ~self.used_mask

    @property
    def draining_mask(self) -> int:
        """Out-of-service IPUs still in a partition (Slurm's drng): their job runs on, so they are in use, and the
        drain waits for it to end; then they are drained. Apart from both allocated (which would hide the drain)
        and drained (which would hide the work)."""
        return self._out_of_service_mask & self.used_mask

    def job_masks(self) -> tuple[int, dict[str, int]]:
        """What the job scheduler may place on: the IPUs free now in any allocation (healthy, on online agents, in
        no partition), and the IPUs each allocation's jobs may use."""
        allowed = self._allowed()
        return self._union(allowed.values()) & ~self.used_mask & ~self.failed_mask, allowed
