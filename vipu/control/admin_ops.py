"""V-IPU's admin commands: agents (one per IPU-Machine), clusters, allocations, users, and the faults an operator
injects or repairs (failed IPUs and links, killed machine actors)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.control.accounts import account
from vipu.control.callers import asked_by
from vipu.control.lifecycle import log_action
from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.partition.admin import Admin
from vipu.partition.agent_states import AgentView, agent_view, agent_views
from vipu.partition.node_names import expand, natural_key
from vipu.partition.admin_records import Agent, Allocation, Cluster, Reason, User
from vipu.partition.rules import check_reason
from vipu.partition.partition_record import Partition
from vipu.partition.pod_state import NoJournal, PodState
from vipu.scheduler.node_requests import rename_nodes

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane
    from vipu.control.snapshot import Snapshot


def agent_names(text: str) -> list[str]:
    """The agents a Slurm host list names, each once, in the order written (node_names.expand)."""
    try:
        return list(dict.fromkeys(expand(text)))
    except ValueError as e:
        raise InvalidArgument(f"names: {e}", field="names") from None


class AdminOps:
    def __init__(self, plane: ControlPlane):
        self.plane = plane

    @property
    def _admin(self) -> Admin:
        return self.plane.controller.admin

    def _once(self, caller: str, kind: str, request_id: str, fields: dict, create):
        """create() once per request id (call under the lock)."""
        return self.plane.creations.once(caller, kind, request_id, fields, create, self._admin.state.table(kind).get)

    def state(self, snap: Snapshot | None = None) -> PodState:
        """The Pod's admin objects, for reads: a snapshot's copy (the current one by default)."""
        return (snap or self.plane.read()).pod

    # -- agents -----------------------------------------------------------------------------------------------
    def create_agent(self, name: str, *, caller: str = "", request_id: str = "", **given) -> Agent:
        """`given`: host, port, machine, each only if set (else its default). With a `request_id`, a retry returns
        what the first call made, as every create here does (creations.py)."""
        with self.plane.lock.changing():
            agent = self._once(caller, "agent", request_id, {"name": name, **given},
                               lambda: self._admin.create_agent(name, **given))
            self._renamed()
        self.plane.changed()  # its machine's IPUs serve again: a job waiting for them may start now
        return agent

    def remove_agent(self, name: str) -> Agent:
        with self.plane.lock.changing():
            agent = self._admin.remove_agent(name)
            self._renamed()
        self.plane.changed()
        return agent

    def _renamed(self) -> None:
        """Node names follow the agents (sbatch -w reads them): pending jobs that name nodes read them again."""
        plane = self.plane
        rename_nodes(plane.scheduler, plane.controller.state.node_names(), plane.now())

    def agent(self, name: str) -> AgentView:
        pod = self.state()
        return agent_view(pod, pod.get("agent", name))

    def agents(self, snap: Snapshot | None = None) -> list[AgentView]:
        pod = self.state(snap)
        return agent_views(pod, sorted(pod.agents.values(), key=lambda x: x.machine))

    def drain_agent(self, name: str, reason: str) -> AgentView:
        """Take a machine out of service for new partitions, its running jobs going on (scontrol update State=DRAIN
        Reason=): DRAINING until they end, then DRAINED. The reason is required, as scontrol requires it; who asked
        and when are kept with it. Draining a drained agent again replaces its reason."""
        return self._set_agent_states([name], "DRAINED", self._drain_reason(reason))[0]

    def drain_agents(self, names: str, reason: str) -> list[AgentView]:
        """drain_agent for each agent a Slurm host list names (NodeName=ag[00-03],ag07), in one change."""
        return self._set_agent_states(agent_names(names), "DRAINED", self._drain_reason(reason))

    def resume_agent(self, name: str) -> AgentView:
        """Back in service for new partitions; its reason goes. Refused for an agent that is not drained."""
        return self._set_agent_states([name], "ONLINE", None)[0]

    def resume_agents(self, names: str) -> list[AgentView]:
        """resume_agent for each agent a Slurm host list names, in one change: refused whole if one is not drained."""
        return self._set_agent_states(agent_names(names), "ONLINE", None)

    def _drain_reason(self, reason: str) -> Reason:
        text = check_reason(reason, "'fan replacement'")
        if not text:
            raise InvalidArgument("reason (--reason) is empty; say why the agent is drained, such as --reason 'fan"
                                  " replacement' (Slurm's scontrol refuses a drain without Reason= too)",
                                  field="reason")
        return Reason(text=text, user=asked_by()[0], at=self.plane.now())

    def _set_agent_states(self, names: list[str], state: str, reason: Reason | None) -> list[AgentView]:
        with self.plane.lock.changing():
            changed = self._admin.set_agent_states(names, state, reason)
            views = agent_views(self._admin.state, changed)
        self.plane.changed()
        return views

    # -- clusters ---------------------------------------------------------------------------------------------
    def create_cluster(self, name: str, agents: list[str], num_ilds: int, topology: str, cluster_topology: str, *,
                       caller: str = "", request_id: str = "") -> Cluster:
        pod = self.plane.pod
        fields = {"name": name, "agents": agents, "num_ilds": num_ilds or 1, "topology": topology or pod.ild_topology,
                  "cluster_topology": cluster_topology or pod.cluster_topology}
        with self.plane.lock.changing():
            return self._once(caller, "cluster", request_id, fields, lambda: self._admin.create_cluster(**fields))

    def remove_cluster(self, name: str) -> Cluster:
        with self.plane.lock.changing():
            return self._admin.remove_cluster(name)

    def cluster(self, name: str) -> Cluster:
        return self.state().get("cluster", name)

    def clusters(self, snap: Snapshot | None = None) -> list[Cluster]:
        return sorted(self.state(snap).clusters.values(), key=lambda x: natural_key(x.name))

    # -- allocations ------------------------------------------------------------------------------------------
    def create_allocation(self, name: str, agents: list[str], users: list[str], *, caller: str = "",
                          request_id: str = "") -> Allocation:
        fields = {"name": name, "agents": agents, "users": users}
        with self.plane.lock.changing():
            return self._once(caller, "allocation", request_id, fields, lambda: self._admin.create_allocation(**fields))

    def remove_allocation(self, name: str) -> Allocation:
        with self.plane.lock.changing():
            self.plane.scheduler.check_allocation_unused(name)  # its pending jobs would wait forever
            return self._admin.remove_allocation(name)

    def allocation(self, name: str) -> Allocation:
        return Admin(self.state(), NoJournal(), self.plane.now).get_allocation(name)

    # -- users ------------------------------------------------------------------------------------------------
    def create_user(self, name: str, admin: bool, unix_user: str | None = None, *, caller: str = "",
                    request_id: str = "") -> tuple[User, str]:
        """The user and their access key (shown once: only its sha256 is kept); `unix_user`, the account their
        programs run as under --secure (accounts.py). A retry with the first call's `request_id` gets the same
        user with a new key in place of the first one's, which the controller cannot give again."""
        if unix_user:
            account(unix_user)  # exists, and is not root
        keys = []

        def create() -> User:
            user, key = self._admin.create_user(name, admin, unix_user or None)
            keys.append(key)
            return user

        fields = {"name": name, "admin": admin, "unix_user": unix_user or None}
        with self.plane.lock.changing():
            user = self._once(caller, "user", request_id, fields, create)
            return (user, keys[0]) if keys else self._admin.new_key(name)

    def update_user(self, name: str, unix_user: str | None) -> User:
        """Map the user to another Unix account ("" removes the mapping; None changes nothing)."""
        if unix_user:
            account(unix_user)  # exists, and is not root
        with self.plane.lock.changing():
            if unix_user is None:
                return self._admin.state.get("user", name)  # NotFound for no such user
            return self._admin.update_user(name, unix_user or None)

    def remove_user(self, name: str) -> User:
        with self.plane.lock.changing():
            return self._admin.remove_user(name)

    def user(self, name: str) -> User:
        return self.state().get("user", name)

    def users(self, snap: Snapshot | None = None) -> list[User]:
        return sorted(self.state(snap).users.values(), key=lambda x: natural_key(x.name))

    def has_admin(self) -> bool:
        return any(u.admin for u in self.state().users.values())

    def has_users(self) -> bool:
        return bool(self.state().users)

    # -- faults -----------------------------------------------------------------------------------------------
    def fail_ipus(self, ipus: list[int], reason: str = "") -> list[Partition]:
        """`reason`: why, optional (else what failed them), kept with each IPU it fails for `vipu info -R`."""
        text = check_reason(reason, "'ECC errors'")
        return self.plane.fail_ipus(ipus, "vipu-admin fail ipus" + (f": {text}" if text else ""), text)

    def fail_link(self, a: int, b: int) -> list[Partition]:
        """Fail the IPU-Link between IPUs a and b: both IPUs are failed (see fail_ipus), the machine actors at its
        ends, if any, refuse traffic over it, and each end's machine counts a link error (with or without
        actors). Returns the partitions that failed."""
        plane = self.plane
        topology = plane.topology
        topology.require_link(a, b)
        failed = plane.fail_ipus([a, b], f"the IPU-Link between IPUs {a} and {b} failed")
        plane.machines.fail_link(a, b)
        for machine in sorted({a // topology.ipus_per_machine, b // topology.ipus_per_machine}):
            plane.metrics.link_errors.labels(str(machine), "ipu_link").inc()
        return failed

    def repair_ipus(self, ipus: list[int]) -> list[int]:
        """Failed IPUs back in service (and their machines' actors told); returns those that were failed."""
        plane = self.plane
        with plane.lock.changing():
            repaired = plane.controller.partitions.repair_ipus(ipus, plane.scheduler.table.cleaning_mask)
            plane.scheduler.repair_ipus(repaired)
        plane.machines.repaired(sorted({ipu // plane.pod.machine.ipus for ipu in repaired}))
        plane.changed()
        return repaired

    def kill_machine(self, machine: int) -> list[int]:
        """Fault injection: kill the machine's actor (Ray restarts it empty); the health check then finds it lost.
        Returns its IPUs."""
        pod = self.plane.pod
        if not 0 <= machine < pod.machines:
            raise InvalidArgument(f"machine is {machine}; {pod.name} has machines 0 to {pod.machines - 1}")
        if not self.plane.machines.enabled:
            raise FailedPrecondition("this controller runs --ray off: there are no machine actors to kill")
        self.plane.machines.kill(machine)
        log_action("machine_killed", f"the actor of machine {machine} killed (its IPUs fail once the health check"
                   " finds it lost)", machine=machine)
        return list(self.plane.topology.machine_ipus(machine))
