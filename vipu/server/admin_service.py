"""The AdminService: agents, clusters, allocations, users and fault injection; thin like the user service."""

from __future__ import annotations

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.server import convert
from vipu.server.status import rpc
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc
from vipu.v1 import partition_pb2 as p


class AdminService(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, runtime):
        self.rt = runtime

    @property
    def admin(self):
        return self.rt.controller.admin

    @property
    def state(self):
        return self.rt.controller.state

    @rpc
    def CreateAgent(self, request, context):
        # only the fields set: an unset one takes its default, a set one is checked as it is (port 0 is refused)
        given = {field: getattr(request, field) for field in ("host", "port", "machine") if request.HasField(field)}
        with self.rt.lock:
            return convert.agent(self.admin.create_agent(request.name, **given), self.state)

    @rpc
    def RemoveAgent(self, request, context):
        with self.rt.lock:
            return convert.agent(self.admin.remove_agent(request.name), self.state)

    @rpc
    def GetAgent(self, request, context):
        with self.rt.lock:
            return convert.agent(self.state.get("agent", request.name), self.state)

    @rpc
    def ListAgents(self, request, context):
        with self.rt.lock:
            agents = sorted(self.state.agents.values(), key=lambda x: x.machine)
            return a.ListAgentsResponse(agents=[convert.agent(x, self.state) for x in agents])

    @rpc
    def DrainAgent(self, request, context):
        with self.rt.lock:
            agent = self.admin.set_agent_state(request.name, "DRAINED")
        self.rt.dispatcher.wake()
        return convert.agent(agent, self.state)

    @rpc
    def ResumeAgent(self, request, context):
        with self.rt.lock:
            agent = self.admin.set_agent_state(request.name, "ONLINE")
        self.rt.dispatcher.wake()
        return convert.agent(agent, self.state)

    @rpc
    def CreateCluster(self, request, context):
        with self.rt.lock:
            cluster = self.admin.create_cluster(
                request.name,
                list(request.agents),
                request.num_ilds or 1,
                request.topology or self.state.pod.ild_topology,
                request.cluster_topology or self.state.pod.cluster_topology,
            )
            return convert.cluster(cluster)

    @rpc
    def RemoveCluster(self, request, context):
        with self.rt.lock:
            return convert.cluster(self.admin.remove_cluster(request.name))

    @rpc
    def GetCluster(self, request, context):
        with self.rt.lock:
            return convert.cluster(self.state.get("cluster", request.name))

    @rpc
    def ListClusters(self, request, context):
        with self.rt.lock:
            clusters = sorted(self.state.clusters.values(), key=lambda x: x.name)
            return a.ListClustersResponse(clusters=[convert.cluster(x) for x in clusters])

    @rpc
    def CreateAllocation(self, request, context):
        with self.rt.lock:
            allocation = self.admin.create_allocation(request.name, list(request.agents), list(request.users))
            return convert.allocation(allocation, self.state)

    @rpc
    def RemoveAllocation(self, request, context):
        with self.rt.lock:
            self.rt.scheduler.check_allocation_unused(request.name)  # its pending jobs would wait forever
            return convert.allocation(self.admin.remove_allocation(request.name), self.state)

    @rpc
    def GetAllocation(self, request, context):
        with self.rt.lock:
            return convert.allocation(self.admin.get_allocation(request.name), self.state)

    @rpc
    def ListAllocations(self, request, context):
        with self.rt.lock:
            allocations = self.admin.list_allocations()
            return p.ListAllocationsResponse(allocations=[convert.allocation(x, self.state) for x in allocations])

    @rpc
    def CreateUser(self, request, context):
        with self.rt.lock:
            user, key = self.admin.create_user(request.name, request.admin)
            return a.CreatedUser(user=convert.user(user), access_key=key)

    @rpc
    def RemoveUser(self, request, context):
        with self.rt.lock:
            return convert.user(self.admin.remove_user(request.name))

    @rpc
    def GetUser(self, request, context):
        with self.rt.lock:
            return convert.user(self.state.get("user", request.name))

    @rpc
    def ListUsers(self, request, context):
        with self.rt.lock:
            users = sorted(self.state.users.values(), key=lambda x: x.name)
            return a.ListUsersResponse(users=[convert.user(x) for x in users])

    @rpc
    def FailIpus(self, request, context):
        failed = self.rt.fail_ipus(list(request.ipus), "vipu-admin fail ipus")
        return p.ListPartitionsResponse(partitions=[convert.partition(x, self.state) for x in failed])

    @rpc
    def FailLink(self, request, context):
        failed = self.rt.fail_link(request.ipu_a, request.ipu_b)
        return p.ListPartitionsResponse(partitions=[convert.partition(x, self.state) for x in failed])

    @rpc
    def RepairIpus(self, request, context):
        ipus = list(request.ipus)
        with self.rt.lock:
            repaired = self.rt.controller.partitions.repair_ipus(ipus)
            self.rt.scheduler.repair_ipus(repaired)
        machines = sorted({ipu // self.state.pod.machine.ipus for ipu in repaired})
        self.rt.fleet.repaired(machines)
        self.rt.dispatcher.wake()
        return a.IpuList(ipus=repaired)

    @rpc
    def KillMachine(self, request, context):
        machine = request.machine
        if not 0 <= machine < self.state.pod.machines:
            raise InvalidArgument(f"machine is {machine}; {self.state.pod.name} has machines 0 to {self.state.pod.machines - 1}")
        if not self.rt.fleet.enabled:
            raise FailedPrecondition("this controller runs --ray off: there are no machine actors to kill")
        self.rt.fleet.kill(machine)
        return a.IpuList(ipus=list(self.state.topology.machine_ipus(machine)))
