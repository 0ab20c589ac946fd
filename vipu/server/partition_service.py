"""The user-facing PartitionService: convert, call the control plane, convert back."""

from __future__ import annotations

from vipu import __version__
from vipu.control.running_config import running_config
from vipu.partition.partition_record import PartitionRequest
from vipu.server import convert
from vipu.server.auth import identity
from vipu.server.status import rpc
from vipu.v1 import partition_pb2 as p
from vipu.v1 import partition_pb2_grpc


class PartitionService(partition_pb2_grpc.PartitionServiceServicer):
    def __init__(self, plane):
        self.plane = plane

    @rpc
    def GetVersion(self, request, context):
        pod = self.plane.pod
        return p.VersionInfo(version=__version__, pod=pod.name, ipus=pod.ipus)

    @rpc
    def GetConfig(self, request, context):
        return p.ConfigInfo(entries=[p.ConfigEntry(key=k, value=v) for k, v in running_config(self.plane)])

    @rpc
    def CreatePartition(self, request, context):
        spec = PartitionRequest(
            name=request.name,
            size=request.size,
            num_gcds=request.num_gcds if request.HasField("num_gcds") else 1,
            gcd_sync_replicas=request.gcd_sync_replicas if request.HasField("gcd_sync_replicas") else None,
            reconfigurable=request.reconfigurable,
            allocation=request.allocation or None,
        )
        made = self.plane.partitions.create(spec, identity(self.plane, context), request.request_id)
        return convert.partition(made, self.plane.pod)

    @rpc
    def GetPartition(self, request, context):
        view = self.plane.partitions.get(request.name, identity(self.plane, context))
        gcd = request.gcd if request.HasField("gcd") else None
        return convert.partition_view(view.partition, view.state, view.api_host, view.api_port, request.ipu_configs,
                                      gcd)

    @rpc
    def ListPartitions(self, request, context):
        page = self.plane.partitions.list(identity(self.plane, context), request.page_size, request.page_token)
        return p.ListPartitionsResponse(partitions=[convert.partition(x, self.plane.pod) for x in page.items],
                                        next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def RemovePartition(self, request, context):
        removed = self.plane.partitions.remove(request.name, request.force, identity(self.plane, context))
        reply = convert.partition(removed.partition, self.plane.pod)
        reply.cancelled_job = removed.cancelled_job or ""
        return reply

    @rpc
    def ResetPartition(self, request, context):
        reset = self.plane.partitions.reset(request.name, identity(self.plane, context))
        return convert.partition(reset, self.plane.pod)

    @rpc
    def AcquirePartition(self, request, context):
        part = self.plane.partitions.acquire(request.name, request.holder, identity(self.plane, context))
        return convert.partition(part, self.plane.pod)

    @rpc
    def ReleasePartition(self, request, context):
        part = self.plane.partitions.release(request.name, request.holder, identity(self.plane, context))
        return convert.partition(part, self.plane.pod)

    @rpc
    def ListAllocations(self, request, context):
        page = self.plane.partitions.allocations(request.page_size, request.page_token)
        return p.ListAllocationsResponse(allocations=[convert.allocation(x, self.plane.pod) for x in page.items],
                                         next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def ListIpus(self, request, context):
        page = self.plane.partitions.ipus(identity(self.plane, context), request.page_size, request.page_token)
        return p.ListIpusResponse(ipus=[convert.ipu(status, stats) for status, stats in page.items],
                                  next_page_token=page.next_page_token, total_size=page.total)

    @rpc
    def ListMachines(self, request, context):
        page = self.plane.partitions.machine_states(identity(self.plane, context),
                                                    [(b.first_ipu, b.ipus) for b in request.blocks],
                                                    request.page_size, request.page_token)
        return p.ListMachinesResponse(machines=[convert.machine(status, stats) for status, stats in page.items],
                                      next_page_token=page.next_page_token, total_size=page.total,
                                      ipus_per_machine=self.plane.pod.machine.ipus)
