"""Administration: agents, clusters, allocations and users, with V-IPU's rules for each."""

from __future__ import annotations

import hashlib
import secrets
from typing import Callable

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument
from vipu.partition.admin_records import (
    AGENT_HOST,
    AGENT_PORT,
    AGENT_STATES,
    CLUSTER_TOPOLOGIES,
    DEFAULT_ALLOCATION,
    Agent,
    Allocation,
    Cluster,
    Reason,
    User,
)
from vipu.partition.agent_states import ONLINE, not_drained, unknown_agents
from vipu.partition.node_names import natural_key
from vipu.partition.rules import check_host, check_name, job_of_partition, named
from vipu.partition.pod_state import Journal, PodState


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def of_jobs(partitions: list[str]) -> list[str]:
    """Partition names for a message, a job's marked as its: 'slurm_35 (job 35)'."""
    return [p if job_of_partition(p) is None else f"{p} (job {job_of_partition(p)})" for p in partitions]


def clear_first(partitions: list[str], fix: str) -> str:
    """What frees `partitions`: `fix` (remove them) for partitions of no job; a job's goes only when the job ends,
    and removing it is refused while the job runs, so the fix for it is cancelling the job."""
    jobs = [str(job) for job in map(job_of_partition, partitions) if job is not None]
    if not jobs:
        return fix
    cancel = f"{named('job', jobs)} (`vipu cancel {' '.join(jobs)}`)"
    others = [p for p in partitions if job_of_partition(p) is None]
    if others:
        return f"remove {named('partition', others)} and cancel {cancel} first"
    return f"cancel {cancel} first: a job's partition is removed when the job ends"


class Admin:
    def __init__(self, state: PodState, journal: Journal, now: Callable[[], float]):
        self.state = state
        self.journal = journal
        self.now = now

    def _commit(self, puts=(), deletes=()) -> None:
        puts, deletes = list(puts), list(deletes)
        self.journal.commit(puts, deletes)
        self.state.apply(puts, deletes)

    def _new_name(self, kind: str, name: str) -> None:
        check_name(kind, name)
        if kind == "allocation" and name == DEFAULT_ALLOCATION:
            raise AlreadyExists("allocation 'default' is the built-in pool of unallocated agents; choose another name",
                                resource=("allocation", name))
        if name in self.state.table(kind):
            raise AlreadyExists(f"{kind} {name!r} already exists; choose another name or remove it first",
                                resource=(kind, name))

    def _known_agents(self, agents: list[str], field: str) -> list[str]:
        if not agents:
            raise InvalidArgument(f"{field} is empty; list agents by name (vipu-admin list agents)")
        if len(set(agents)) != len(agents):
            raise InvalidArgument(f"{field} names an agent twice; list each agent once")
        for name in agents:
            self.state.get("agent", name)
        return agents

    def _partitions_on(self, agents: list[str]) -> list[str]:
        machines = {self.state.agents[a].machine for a in agents}
        return sorted(
            p.name
            for p in self.state.partitions.values()
            if any(self.state.topology.place(ipu).machine in machines for ipu in p.ipus)
        )

    def _refuse_if_in_use(self, what: str, agents: list[str]) -> None:
        busy = self._partitions_on(agents)
        if busy:
            one = len(busy) == 1
            fix = f"remove {'that partition' if one else 'those partitions'} first"
            raise FailedPrecondition(f"{named('partition', of_jobs(busy))} {'is' if one else 'are'} on the IPUs of"
                                     f" {what}; {clear_first(busy, fix)}")

    # agents --------------------------------------------------------------------------------------------------
    def create_agent(self, name: str, host: str = AGENT_HOST, port: int = AGENT_PORT,
                     machine: int | None = None) -> Agent:
        self._new_name("agent", name)
        check_host(host)
        if not 0 < port < 65536:
            raise InvalidArgument(f"port (--port) is {port}; give a TCP port from 1 to 65535")
        taken = self.state.agent_of_machine()
        if machine is None:
            free = [m for m in range(self.state.pod.machines) if m not in taken]
            if not free:
                # a conflict with the agents there are (exit 4), not a lack of room that waiting could end
                raise FailedPrecondition(
                    f"every one of the {self.state.pod.machines} machines of {self.state.pod.name} has an agent;"
                    " remove one first or start the controller with a bigger --pod", reason="NO_MACHINE_WITHOUT_AGENT"
                )
            machine = free[0]
        if not 0 <= machine < self.state.pod.machines:
            raise InvalidArgument(
                f"machine is {machine}; {self.state.pod.name} has machines 0 to {self.state.pod.machines - 1}"
            )
        if machine in taken:
            raise AlreadyExists(f"machine {machine} already has agent {taken[machine].name}; remove it first",
                                resource=("agent", taken[machine].name))
        agent = Agent(name=name, host=host, port=port, machine=machine, created_at=self.now())
        # a cluster is whole IPU-Link domains: an agent replacing one of its machines' joins it (allocations are
        # grants, so it joins none of those)
        per_ild = self.state.pod.machines_per_ild
        joined = [
            ("cluster", c.name, c.model_copy(update={"agents": [*c.agents, name]}))
            for c in self.state.clusters.values()
            if machine // per_ild in {self.state.agents[a].machine // per_ild for a in c.agents}
        ]
        self._commit(puts=[("agent", name, agent), *joined])
        return agent

    def remove_agent(self, name: str) -> Agent:
        agent = self.state.get("agent", name)
        self._refuse_if_in_use(f"agent {name}", [name])
        holders = [
            (kind, record)
            for kind in ("cluster", "allocation")
            for record in self.state.table(kind).values()
            if name in record.agents
        ]
        puts = [
            (kind, r.name, r.model_copy(update={"agents": [a for a in r.agents if a != name]})) for kind, r in holders
        ]
        self._commit(puts=puts, deletes=[("agent", name)])
        return agent

    def set_agent_state(self, name: str, state: str, reason: Reason | None = None) -> Agent:
        return self.set_agent_states([name], state, reason)[0]

    def set_agent_states(self, names: list[str], state: str, reason: Reason | None = None) -> list[Agent]:
        """Drain (DRAINED, why and who in `reason`; again: the new reason) or resume (ONLINE: the reason goes, as
        Slurm clears a node's at resume) these agents, each once, in one commit: all or none, as scontrol updates
        a host list. Refused before anything changes: names that are no agent; a resume of agents not drained."""
        if state not in AGENT_STATES:
            raise InvalidArgument(f"state is {state!r}; an agent is {' or '.join(AGENT_STATES)}")
        names = list(dict.fromkeys(names))
        unknown = [n for n in names if n not in self.state.agents]
        if unknown:
            raise unknown_agents(unknown, names)
        if state == ONLINE:
            online = [n for n in names if self.state.agents[n].state == ONLINE]
            if online:
                raise not_drained(self.state, online, names)
        update = {"state": state, "reason": reason if state != ONLINE else None}
        agents = [self.state.agents[n].model_copy(update=update) for n in names]
        self._commit(puts=[("agent", a.name, a) for a in agents])
        return agents

    # clusters ------------------------------------------------------------------------------------------------
    def create_cluster(
        self, name: str, agents: list[str], num_ilds: int, topology: str, cluster_topology: str
    ) -> Cluster:
        self._new_name("cluster", name)
        self._known_agents(agents, "agents")
        if topology != self.state.pod.ild_topology:
            raise InvalidArgument(
                f"topology is {topology!r} but the IPU-Links of {self.state.pod.name} form a"
                f" {self.state.pod.ild_topology}; use {self.state.pod.ild_topology}"
            )
        if cluster_topology not in CLUSTER_TOPOLOGIES:
            raise InvalidArgument(f"cluster_topology is {cluster_topology!r}; use {', '.join(CLUSTER_TOPOLOGIES)}")
        pod = self.state.pod
        if num_ilds < 1:
            raise InvalidArgument(f"num_ilds (--num-ipulinkdomains) is {num_ilds}; give the number of IPU-Link domains"
                                  f" the agents form, 1 or more ({pod.machines_per_ild} agents each)")
        if len(agents) != num_ilds * pod.machines_per_ild:
            raise InvalidArgument(
                f"num_ilds (--num-ipulinkdomains) is {num_ilds} but {len(agents)} agents were given; an IPU-Link"
                f" domain of {pod.name} is {pod.machines_per_ild} agents, so give {num_ilds * pod.machines_per_ild}"
                " agents"
            )
        ilds = {self.state.agents[a].machine // pod.machines_per_ild for a in agents}
        if len(ilds) != num_ilds:
            raise InvalidArgument(
                "agents do not form whole IPU-Link domains; give all the agents of each domain (machines"
                f" {pod.machines_per_ild} at a time, aligned)"
            )
        for other in self.state.clusters.values():
            shared = sorted(set(other.agents) & set(agents))
            if shared:
                raise FailedPrecondition(f"{named('agent', shared, 4)} already belong{'s' if len(shared) == 1 else ''}"
                                         f" to cluster {other.name}; remove that cluster first")
        cluster = Cluster(
            name=name,
            agents=agents,
            num_ilds=num_ilds,
            topology=topology,
            cluster_topology=cluster_topology,
            created_at=self.now(),
        )
        self._commit(puts=[("cluster", name, cluster)])
        return cluster

    def remove_cluster(self, name: str) -> Cluster:
        cluster = self.state.get("cluster", name)
        self._refuse_if_in_use(f"cluster {name}", cluster.agents)
        held = sorted(a.name for a in self.state.allocations.values() if set(a.agents) & set(cluster.agents))
        if held:  # an allocation is carved from a cluster: it would be left holding agents of none
            raise FailedPrecondition(f"cluster {name} holds the agents of {named('allocation', held)}; remove"
                                     f" {'it' if len(held) == 1 else 'them'} first")
        self._commit(deletes=[("cluster", name)])
        return cluster

    # allocations ---------------------------------------------------------------------------------------------
    def create_allocation(self, name: str, agents: list[str], users: list[str] | None = None) -> Allocation:
        self._new_name("allocation", name)
        self._known_agents(agents, "agents")
        clustered = {a for cluster in self.state.clusters.values() for a in cluster.agents}
        loose = sorted(set(agents) - clustered)
        if loose:  # as in V-IPU, an allocation is carved from a cluster
            raise FailedPrecondition(f"{named('agent', loose, 4)} {'is' if len(loose) == 1 else 'are'} in no cluster;"
                                     " add them to one (`vipu-admin create cluster`) first")
        for other in self.state.allocations.values():
            shared = sorted(set(other.agents) & set(agents))
            if shared:
                raise FailedPrecondition(
                    f"{named('agent', shared, 4)} already belong{'s' if len(shared) == 1 else ''} to allocation"
                    f" {other.name}; an agent is in at most one allocation"
                )
        # Partitions cannot span allocations: agents under a partition of the default pool cannot move.
        self._refuse_if_in_use(named("agent", agents), agents)
        for user in users or []:
            self.state.get("user", user)
        allocation = Allocation(name=name, agents=agents, users=users or [], created_at=self.now())
        self._commit(puts=[("allocation", name, allocation)])
        return allocation

    def remove_allocation(self, name: str) -> Allocation:
        if name == DEFAULT_ALLOCATION:
            raise InvalidArgument("the default allocation is every agent of a cluster that no allocation holds, and"
                                  " cannot be removed")
        allocation = self.state.get("allocation", name)
        busy = sorted(p.name for p in self.state.partitions.values() if p.allocation == name)
        if busy:
            fix = f"remove {'it' if len(busy) == 1 else 'them'} first"
            raise FailedPrecondition(f"allocation {name} has {named('partition', of_jobs(busy))};"
                                     f" {clear_first(busy, fix)}")
        self._commit(deletes=[("allocation", name)])
        return allocation

    def list_allocations(self) -> list[Allocation]:
        # derived, never stored: it came to be with the first cluster (the Pod's, at the controller's first start)
        made = min((c.created_at for c in self.state.clusters.values()), default=0.0)
        default = Allocation(
            name=DEFAULT_ALLOCATION, agents=self.state.allocation_agents(DEFAULT_ALLOCATION), created_at=made
        )
        return [default, *sorted(self.state.allocations.values(), key=lambda a: natural_key(a.name))]

    def get_allocation(self, name: str) -> Allocation:
        if name == DEFAULT_ALLOCATION:
            return self.list_allocations()[0]
        return self.state.get("allocation", name)

    # users ---------------------------------------------------------------------------------------------------
    def create_user(self, name: str, admin: bool = False, unix_user: str | None = None) -> tuple[User, str]:
        """Returns the user and its access key; the key is shown this once and only its hash is stored.
        `unix_user`: the account the user's programs run as under --secure (the caller checks it exists)."""
        self._new_name("user", name)
        key = secrets.token_urlsafe(24)
        user = User(name=name, admin=admin, key_sha256=key_hash(key), created_at=self.now(), unix_user=unix_user)
        self._commit(puts=[("user", name, user)])
        return user, key

    def update_user(self, name: str, unix_user: str | None) -> User:
        """The user with another Unix account (None: none); their access key stays."""
        user = self.state.get("user", name).model_copy(update={"unix_user": unix_user})
        self._commit(puts=[("user", name, user)])
        return user

    def new_key(self, name: str) -> tuple[User, str]:
        """A new access key for the user in place of their old one (which stops working), shown this once."""
        key = secrets.token_urlsafe(24)
        user = self.state.get("user", name).model_copy(update={"key_sha256": key_hash(key)})
        self._commit(puts=[("user", name, user)])
        return user, key

    def remove_user(self, name: str) -> User:
        """Revoke a user's access key; their jobs and partitions stay (an admin can still act on them), and so do
        the allocations' grants to the name: dropping the last name from a grant would open that allocation to
        everyone's jobs (a grant to no one is open to jobs), while the name re-created is most often the same
        person re-keyed."""
        user = self.state.get("user", name)
        if user.admin and not any(u.admin for u in self.state.users.values() if u.name != name):
            raise FailedPrecondition(
                f"user {name} is the last admin; a --secure controller would have no one to administer it: create"
                " another admin first"
            )
        self._commit(deletes=[("user", name)])
        return user

    def user_for_key(self, key: str) -> User | None:
        digest = key_hash(key)
        return next((u for u in self.state.users.values() if secrets.compare_digest(u.key_sha256, digest)), None)
