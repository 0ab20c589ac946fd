"""The user-facing PartitionService: convert, call the domain under the controller lock, convert back."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from vipu import __version__
from vipu.errors import AlreadyExists, InvalidArgument
from vipu.partition.partition import Partition, PartitionRequest
from vipu.partition.state import missing
from vipu.partition.rules import check_name, check_user_holder
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
        """The partition, if the caller may act on it (call before taking the lock): one the caller may not see is
        NOT_FOUND, one they see but do not own (their allocation's) PERMISSION_DENIED."""
        identity = self.rt.identity(context)
        with self.rt.lock:
            part = self._seen(identity, name)
        identity.check_owner("partition", name, part.owner)

    def _seen(self, identity, name: str) -> Partition:
        """The partition, if the caller may see it (call under the lock). One they may not see is refused in the words
        used for one that does not exist, so a --secure controller reveals neither that it exists nor whose it is."""
        part = self.rt.controller.partitions.get(name)
        if not self._visible(identity)(part):
            raise missing("partition", name)
        return part

    def _visible(self, identity) -> Callable[[Partition], bool]:
        """Which partitions the caller may see (call under the lock)."""
        allocations = self.rt.controller.state.allocations

        def sees(part: Partition) -> bool:
            granted = allocations[part.allocation].users if part.allocation in allocations else []
            return identity.sees_partition(part.owner, granted)

        return sees

    @rpc
    def CreatePartition(self, request, context):
        identity = self.rt.identity(context)
        if identity.name:  # the partition's owner: the same rule as a job's user (submit checks it)
            try:
                check_name("user", identity.name)
            except InvalidArgument as e:
                raise InvalidArgument(f"the caller's user id (--api-user-id, VIPU_CLI_API_USER_ID): {e.message}") from None
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
            try:
                part = self.rt.controller.partitions.create(spec)
            except AlreadyExists:
                taken = self.rt.controller.state.partitions.get(spec.name)
                if taken is None or self._visible(identity)(taken):
                    raise
                # names are the controller's, not each user's (as V-IPU's): the name is refused, but neither its
                # owner nor a `vipu remove partition` the caller could not run is named
                raise AlreadyExists(
                    f"partition name {spec.name!r} is taken; partition names are shared by every user of this"
                    " controller: choose another name"
                ) from None
            return convert.partition(part, self.rt.controller.state)

    @rpc
    def GetPartition(self, request, context):
        identity = self.rt.identity(context)
        with self.rt.lock:
            part = self._seen(identity, request.name)
            gcd = request.gcd if request.HasField("gcd") else None
            return convert.partition_view(
                part, self.rt.controller.state, self.rt.api_host, self.rt.api_port, request.ipu_configs, gcd
            )

    @rpc
    def ListPartitions(self, request, context):
        identity = self.rt.identity(context)
        with self.rt.lock:
            state = self.rt.controller.state
            sees = self._visible(identity)
            visible = [x for x in self.rt.controller.partitions.list() if sees(x)]
            return p.ListPartitionsResponse(partitions=[convert.partition(x, state) for x in visible])

    @rpc
    def RemovePartition(self, request, context):
        self._own(request.name, context)
        removed, cancelled = self.rt.remove_partition(request.name, request.force)
        with self.rt.lock:
            reply = convert.partition(removed, self.rt.controller.state)
        reply.cancelled_job = cancelled or ""
        return reply

    @rpc
    def ResetPartition(self, request, context):
        self._own(request.name, context)
        reset = self.rt.reset_partition(request.name)
        with self.rt.lock:
            return convert.partition(reset, self.rt.controller.state)

    @rpc
    def AcquirePartition(self, request, context):
        self._own(request.name, context)
        check_user_holder(request.holder)
        with self.rt.lock:
            part = self.rt.controller.partitions.acquire(request.name, request.holder)
            return convert.partition(part, self.rt.controller.state)

    @rpc
    def ReleasePartition(self, request, context):
        self._own(request.name, context)
        check_user_holder(request.holder)
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
        identity = self.rt.identity(context)
        stats = self.rt.fleet.stats()  # actor calls: outside the lock
        with self.rt.lock:
            statuses = self.rt.controller.partitions.ipu_statuses()
            sees = self._visible(identity)
            hidden = {x.name for x in self.rt.controller.partitions.list() if not sees(x)}
        # an IPU in a partition the caller may not see is shown allocated (or draining), without the partition's name
        return p.ListIpusResponse(ipus=[convert.ipu(replace(s, partition=None) if s.partition in hidden else s,
                                                    stats.get(s.machine)) for s in statuses])
