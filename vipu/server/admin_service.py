"""The AdminService: agents, clusters, allocations, users and fault injection; thin like the user service."""

from __future__ import annotations

from vipu.server import convert
from vipu.server.auth import identity
from vipu.server.status import rpc
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc
from vipu.v1 import partition_pb2 as p


class AdminService(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, plane):
        self.plane = plane
        self.admin = plane.admin

    def _agent(self, agent) -> a.Agent:
        return convert.agent(agent, self.plane.topology)

    def _once(self, request, context) -> dict:
        """Who asked and the request id of a create, for a retry to get what the first call made."""
        return {"caller": identity(self.plane, context).name, "request_id": request.request_id}

    def _partitions(self, partitions) -> p.ListPartitionsResponse:
        return p.ListPartitionsResponse(partitions=[convert.partition(x, self.plane.pod) for x in partitions])

    @rpc
    def CreateAgent(self, request, context):
        # only the fields set: an unset one takes its default, a set one is checked as it is (port 0 is refused)
        given = {field: getattr(request, field) for field in ("host", "port", "machine") if request.HasField(field)}
        return self._agent(self.admin.create_agent(request.name, **self._once(request, context), **given))

    @rpc
    def RemoveAgent(self, request, context):
        return self._agent(self.admin.remove_agent(request.name))

    @rpc
    def GetAgent(self, request, context):
        return self._agent(self.admin.agent(request.name))

    @rpc
    def ListAgents(self, request, context):
        page = self.plane.page("agents", lambda snap: self.admin.agents(snap), request.page_size, request.page_token)
        return a.ListAgentsResponse(agents=[self._agent(x) for x in page.items],
                                    next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def DrainAgent(self, request, context):
        return self._agent(self.admin.drain_agent(request.name, request.reason))

    @rpc
    def ResumeAgent(self, request, context):
        return self._agent(self.admin.resume_agent(request.name))

    @rpc
    def DrainAgents(self, request, context):
        return a.ListAgentsResponse(agents=[self._agent(x) for x in self.admin.drain_agents(request.names,
                                                                                          request.reason)])

    @rpc
    def ResumeAgents(self, request, context):
        return a.ListAgentsResponse(agents=[self._agent(x) for x in self.admin.resume_agents(request.names)])

    @rpc
    def CreateCluster(self, request, context):
        return convert.cluster(self.admin.create_cluster(request.name, list(request.agents), request.num_ilds,
                                                         request.topology, request.cluster_topology,
                                                         **self._once(request, context)))

    @rpc
    def RemoveCluster(self, request, context):
        return convert.cluster(self.admin.remove_cluster(request.name))

    @rpc
    def GetCluster(self, request, context):
        return convert.cluster(self.admin.cluster(request.name))

    @rpc
    def ListClusters(self, request, context):
        page = self.plane.page("clusters", lambda snap: self.admin.clusters(snap), request.page_size,
                               request.page_token)
        return a.ListClustersResponse(clusters=[convert.cluster(x) for x in page.items],
                                      next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def CreateAllocation(self, request, context):
        allocation = self.admin.create_allocation(request.name, list(request.agents), list(request.users),
                                                  **self._once(request, context))
        return convert.allocation(allocation, self.plane.pod)

    @rpc
    def RemoveAllocation(self, request, context):
        return convert.allocation(self.admin.remove_allocation(request.name), self.plane.pod)

    @rpc
    def GetAllocation(self, request, context):
        return convert.allocation(self.admin.allocation(request.name), self.plane.pod)

    @rpc
    def ListAllocations(self, request, context):
        page = self.plane.partitions.allocations(request.page_size, request.page_token)
        return p.ListAllocationsResponse(allocations=[convert.allocation(x, self.plane.pod) for x in page.items],
                                         next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def CreateUser(self, request, context):
        user, key = self.admin.create_user(request.name, request.admin, request.unix_user,
                                           **self._once(request, context))
        return a.CreatedUser(user=convert.user(user), access_key=key)

    @rpc
    def UpdateUser(self, request, context):
        unix_user = request.unix_user if request.HasField("unix_user") else None
        return convert.user(self.admin.update_user(request.name, unix_user))

    @rpc
    def RemoveUser(self, request, context):
        return convert.user(self.admin.remove_user(request.name))

    @rpc
    def GetUser(self, request, context):
        return convert.user(self.admin.user(request.name))

    @rpc
    def ListUsers(self, request, context):
        page = self.plane.page("users", lambda snap: self.admin.users(snap), request.page_size, request.page_token)
        return a.ListUsersResponse(users=[convert.user(x) for x in page.items],
                                   next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def FailIpus(self, request, context):
        return self._partitions(self.admin.fail_ipus(list(request.ipus), request.reason))

    @rpc
    def FailLink(self, request, context):
        return self._partitions(self.admin.fail_link(request.ipu_a, request.ipu_b))

    @rpc
    def RepairIpus(self, request, context):
        return a.IpuList(ipus=self.admin.repair_ipus(list(request.ipus)))

    @rpc
    def KillMachine(self, request, context):
        return a.IpuList(ipus=self.admin.kill_machine(request.machine))
