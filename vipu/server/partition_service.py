"""The user-facing PartitionService: convert, call the domain under the controller lock, convert back."""

from __future__ import annotations

from vipu import __version__
from vipu.partition.partition import PartitionRequest
from vipu.server import convert
from vipu.server.status import rpc
from vipu.v1 import partition_pb2 as p
from vipu.v1 import partition_pb2_grpc


class PartitionService(partition_pb2_grpc.PartitionServiceServicer):
    def __init__(self, runtime):
        self.rt = runtime  # vipu.server.runtime.Runtime: controller, lock and advertised address

    @rpc
    def GetVersion(self, request, context):
        pod = self.rt.controller.pod
        return p.VersionInfo(version=__version__, pod=pod.name, ipus=pod.ipus)

    def _own(self, name: str, context):
        """The partition, if the caller may act on it (call before taking the lock)."""
        identity = self.rt.identity(context)
        with self.rt.lock:
            part = self.rt.controller.partitions.get(name)
        identity.check_owner("partition", name, part.owner)

    @rpc
    def CreatePartition(self, request, context):
        identity = self.rt.identity(context)
        spec = PartitionRequest(
            name=request.name,
            size=request.size,
            num_gcds=request.num_gcds if request.HasField("num_gcds") else 1,
            gcd_sync_replicas=request.gcd_sync_replicas if request.HasField("gcd_sync_replicas") else None,
            reconfigurable=request.reconfigurable,
            allocation=request.allocation or None,
            owner=identity.name,
        )
        with self.rt.lock:
            if spec.allocation and not identity.admin:  # (an admin may use any: create() checks the name)
                identity.check_allocation(spec.allocation, self.rt.controller.admin.get_allocation(spec.allocation).users)
            part = self.rt.controller.partitions.create(spec)
            return convert.partition(part, self.rt.controller.state)

    @rpc
    def GetPartition(self, request, context):
        self._own(request.name, context)
        with self.rt.lock:
            part = self.rt.controller.partitions.get(request.name)
            gcd = request.gcd if request.HasField("gcd") else None
            return convert.partition_view(
                part, self.rt.controller.state, self.rt.api_host, self.rt.api_port, request.ipu_configs, gcd
            )

    @rpc
    def ListPartitions(self, request, context):
        identity = self.rt.identity(context)
        with self.rt.lock:
            state = self.rt.controller.state
            visible = [x for x in self.rt.controller.partitions.list() if identity.sees(x.owner)]
            return p.ListPartitionsResponse(partitions=[convert.partition(x, state) for x in visible])

    @rpc
    def RemovePartition(self, request, context):
        self._own(request.name, context)
        removed = self.rt.remove_partition(request.name, request.force)
        with self.rt.lock:
            return convert.partition(removed, self.rt.controller.state)

    @rpc
    def ResetPartition(self, request, context):
        self._own(request.name, context)
        reset = self.rt.reset_partition(request.name)
        with self.rt.lock:
            return convert.partition(reset, self.rt.controller.state)

    @rpc
    def AcquirePartition(self, request, context):
        self._own(request.name, context)
        with self.rt.lock:
            part = self.rt.controller.partitions.acquire(request.name, request.holder)
            return convert.partition(part, self.rt.controller.state)

    @rpc
    def ReleasePartition(self, request, context):
        self._own(request.name, context)
        with self.rt.lock:
            part = self.rt.controller.partitions.release(request.name, request.holder)
            return convert.partition(part, self.rt.controller.state)

    @rpc
    def ListAllocations(self, request, context):
        with self.rt.lock:
            state = self.rt.controller.state
            allocations = self.rt.controller.admin.list_allocations()
            return p.ListAllocationsResponse(allocations=[convert.allocation(x, state) for x in allocations])

    @rpc
    def ListIpus(self, request, context):
        stats = self.rt.fleet.stats()  # actor calls: outside the lock
        with self.rt.lock:
            statuses = self.rt.controller.partitions.ipu_statuses()
        return p.ListIpusResponse(ipus=[convert.ipu(s, stats.get(s.machine)) for s in statuses])
