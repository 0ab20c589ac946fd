"""V-IPU's partition commands (create, get, list, remove, reset, acquire, release) and the IPUs' view, with who
may see and change which partition.

Why a running job's partition is special: slurm_<n> holds job n's run, and the scheduler counts its IPUs as used by
that job; removing or resetting it under the job would hand them out twice, so both go through the job. A partition
the caller may not see is refused in the words used for one that does not exist, so a --secure controller reveals
neither that it exists nor whose it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

from vipu.access import Identity
from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument
from vipu.partition.admin import Admin
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.partition.partition_record import Partition, PartitionRequest
from vipu.partition.ipu_status import IpuStatus, MachineStatus, machines_spanned
from vipu.partition.node_names import natural_key
from vipu.partition.rules import check_name, check_user_holder, job_holder, job_of_partition
from vipu.partition.pod_state import NoJournal, PodState, missing

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane
    from vipu.control.snapshot import Page, Snapshot


class Removed(NamedTuple):
    partition: Partition
    cancelled_job: str | None  # the running job cancelled with it, as squeue names it


class PartitionView(NamedTuple):
    """A partition with what its IPUoF view is made of: the Pod's state then, and where jobs reach the controller."""

    partition: Partition
    state: PodState
    api_host: str
    api_port: int


class PartitionOps:
    def __init__(self, plane: ControlPlane):
        self.plane = plane

    @property
    def _state(self) -> PodState:
        return self.plane.controller.state

    def _visible(self, identity: Identity, state: PodState) -> Callable[[Partition], bool]:
        allocations = state.allocations

        def sees(part: Partition) -> bool:
            granted = allocations[part.allocation].users if part.allocation in allocations else []
            return identity.sees_partition(part.owner, granted)

        return sees

    def _seen(self, identity: Identity, name: str, state: PodState) -> Partition:
        part = state.get("partition", name)
        if not self._visible(identity, state)(part):
            raise missing("partition", name)
        return part

    def _owned(self, identity: Identity, name: str) -> Partition:
        """The partition, if the caller may change it (call under the lock): one they may not see is NOT_FOUND,
        one they see but do not own (their allocation's) PERMISSION_DENIED."""
        part = self._seen(identity, name, self._state)
        identity.check_owner("partition", name, part.owner)
        return part

    def create(self, request: PartitionRequest, identity: Identity, request_id: str = "") -> Partition:
        """A new partition; with a `request_id`, a retry returns the partition the first call made (creations.py)."""
        if identity.name:  # the partition's owner: the same rule as a job's user (submit checks it)
            try:
                check_name("user", identity.name)
            except InvalidArgument as e:
                raise InvalidArgument(f"the caller's user id (x-vipu-user; the CLI's --api-user-id, VIPU_CLI_API_USER_ID): {e.message}") \
                    from None
        request = request.model_copy(update={"owner": identity.name})
        plane = self.plane
        with plane.lock.changing():
            if not identity.admin:  # (an admin may use any: create() checks the name; without --secure all are)
                allocation = plane.controller.admin.get_allocation(request.allocation or DEFAULT_ALLOCATION)
                identity.check_partition_allocation(allocation.name, allocation.users, allocation.agents,
                                                    default=allocation.name == DEFAULT_ALLOCATION)
            try:
                part = plane.creations.once(identity.name, "partition", request_id, request.model_dump(),
                                            lambda: plane.controller.partitions.create(request),
                                            self._state.partitions.get)
            except AlreadyExists as e:
                if e.reason == "REQUEST_ID_REUSED":
                    raise
                taken = self._state.partitions.get(request.name)
                if taken is None or self._visible(identity, self._state)(taken):
                    raise
                # names are the controller's, not each user's (as V-IPU's): the name is refused, but neither its
                # owner nor a `vipu remove partition` the caller could not run is named
                raise AlreadyExists(f"partition name {request.name!r} is taken; partition names are shared by every"
                                    " user of this controller: choose another name",
                                    resource=("partition", request.name)) from None
        return part

    def get(self, name: str, identity: Identity) -> PartitionView:
        state = self.plane.read().pod
        part = self._seen(identity, name, state)
        return PartitionView(part, state, self.plane.api_host, self.plane.api_port)

    def list(self, identity: Identity, page_size: int = 0, page_token: str = "") -> Page:
        """The partitions the caller may see, by name in natural order (slurm_2 before slurm_10)."""
        def make(snap: Snapshot) -> list[Partition]:
            sees = self._visible(identity, snap.pod)
            return sorted((p for p in snap.pod.partitions.values() if sees(p)), key=lambda p: natural_key(p.name))

        return self.plane.page(repr(("partitions", identity)), make, page_size, page_token)

    def remove(self, name: str, force: bool, identity: Identity) -> Removed:
        """Remove a partition. A running job's (slurm_<n>) goes only with force, and then as `vipu cancel n`: the
        job ends CANCELLED with it, since a job counted as running on IPUs that are free again would see them
        handed out twice."""
        plane = self.plane
        with plane.lock.changing():
            self._owned(identity, name)
            job = self._running_job_of(name)
            if job is None:
                removed = Removed(plane.controller.partitions.remove(name, force), None)
            else:
                removed = self._remove_running(name, force, job, identity)
        plane.changed()  # its IPUs are free: a pending job may start
        return removed

    def _remove_running(self, name: str, force: bool, job, identity: Identity) -> Removed:
        """Remove a running job's partition: only with force, as a cancel of the job (call under the lock)."""
        shown = job.display_id  # 26_0 for an array's first task: 26 is every task
        if not force:
            raise FailedPrecondition(
                f"partition {name} belongs to running job {shown}; `vipu cancel {shown}` ends the job and removes"
                " it (remove with force, --force, cancels the job too)")
        plane, now = self.plane, self.plane.now()
        stops = plane.scheduler.cancel([job.id], now, single=True, uid=plane.uid(identity.name),
                                       why=f"its partition {name} was removed (vipu remove partition --force)")
        removed = plane.controller.partitions.remove(name, force=True)
        plane.driver.apply(stops, now)  # its own removal finds the partition gone
        return Removed(removed, shown)

    def reset(self, name: str, identity: Identity) -> Partition:
        plane = self.plane
        with plane.lock.changing():
            self._owned(identity, name)
            job = self._running_job_of(name)
            if job is not None:
                raise FailedPrecondition(
                    f"partition {name} belongs to running job {job.display_id}, and a reset would stop its workload;"
                    f" `vipu requeue {job.display_id}` or `vipu cancel {job.display_id}` ends the run instead")
            return plane.controller.partitions.reset(name)

    def _running_job_of(self, name: str):
        """The running job that holds this partition, if it is one's (call under the lock)."""
        job_id = job_of_partition(name)
        table = self.plane.scheduler.table
        if job_id is None or job_id not in table.running:
            return None
        partition = self._state.partitions.get(name)
        return table.jobs[job_id] if partition is not None and partition.holder == job_holder(job_id) else None

    def acquire(self, name: str, holder: str, identity: Identity) -> Partition:
        check_user_holder(holder)
        with self.plane.lock.changing():
            self._owned(identity, name)
            return self.plane.controller.partitions.acquire(name, holder)

    def release(self, name: str, holder: str, identity: Identity) -> Partition:
        check_user_holder(holder)
        with self.plane.lock.changing():
            self._owned(identity, name)
            return self.plane.controller.partitions.release(name, holder)

    def allocations(self, page_size: int = 0, page_token: str = "") -> Page:
        """Every allocation, the default one (every agent no named allocation holds) first."""
        return self.plane.page("allocations", lambda snap: Admin(snap.pod, NoJournal(), self.plane.now)
                               .list_allocations(), page_size, page_token)

    def ipus(self, identity: Identity, page_size: int = 0, page_token: str = "") -> Page:
        """Every IPU's state and partition (one the caller may not see: without its name), with its machine's
        counters (None without an actor)."""
        stats = self.plane.machine_stats()  # actor calls: outside any lock

        def make(snap: Snapshot) -> list[tuple[IpuStatus, dict | None]]:
            sees = self._visible(identity, snap.pod)
            hidden = {p.name for p in snap.pod.partitions.values() if not sees(p)}
            return [(s._replace(partition=None) if s.partition in hidden else s, stats.get(s.machine))
                    for s in snap.ipu_statuses()]

        return self.plane.page(repr(("ipus", identity)), make, page_size, page_token, fresh=True)

    def machine_states(self, identity: Identity, blocks: list[tuple[int, int]], page_size: int = 0,
                       page_token: str = "") -> Page:
        """Each machine with its IPUs by state (ipu_status.MachineStatus; the partitions the caller may not see left
        out), with its machine's counters (None without an actor), or only the machines some blocks of IPUs span
        (first IPU, IPUs): the nodes a listing of jobs names."""
        total = self.plane.pod.ipus
        for i, (first, size) in enumerate(blocks):
            if not (0 <= first < total and 0 <= size <= total - first):
                raise InvalidArgument(f"blocks[{i}] is {size} IPUs from IPU {first}, outside the Pod's IPUs 0 to"
                                      f" {total - 1}; give blocks inside it (a job's detail.first_ipu and ipus)")
        only = machines_spanned(blocks, self.plane.pod.machine.ipus) if blocks else None
        stats = self.plane.machine_stats()  # actor calls: outside any lock

        def make(snap: Snapshot) -> list[tuple[MachineStatus, dict | None]]:
            sees = self._visible(identity, snap.pod)
            hidden = {p.name for p in snap.pod.partitions.values() if not sees(p)}
            return [(s._replace(partitions=tuple(n for n in s.partitions if n not in hidden)) if hidden else s,
                     stats.get(s.machine)) for s in snap.machine_statuses(only)]

        return self.plane.page(repr(("machines", identity, sorted(only or ()))), make, page_size, page_token,
                               fresh=True)
