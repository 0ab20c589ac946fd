"""Creating, resetting, holding and removing partitions, and the IPUs' view of them."""

from __future__ import annotations

from typing import Callable

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, ResourceExhausted
from vipu.partition.admin_records import DEFAULT_ALLOCATION, DEFAULT_HOLDS, IpuFailure, Reason
from vipu.partition.partition_record import Partition, PartitionRequest, Transition
from vipu.partition.placement import block_mask, largest_free_block, place
from vipu.partition.rules import check_gcds, check_job_name, check_name, check_size, n_ipus, named
from vipu.partition.ipu_status import IpuStatus, ipu_statuses, not_failed
from vipu.partition.node_names import natural_key
from vipu.partition.pod_state import Journal, PodState
from vipu.partition.partition_states import PartitionState as S


class Partitions:
    def __init__(self, state: PodState, journal: Journal, now: Callable[[], float]):
        self.state = state
        self.journal = journal
        self.now = now
        # allocation -> (its capacity mask, that mask's largest aligned block): every submit asks (a quarter of a
        # millisecond on a 65,536-IPU Pod); the mask object is PodState's cached one until agents or allocations change
        self._largest: dict[str, tuple[int, int]] = {}

    def _put(self, partition: Partition) -> Partition:
        self.journal.commit([("partition", partition.name, partition)], [])
        self.state.partitions[partition.name] = partition
        return partition

    def create(self, request: PartitionRequest) -> Partition:
        state = self.state
        check_name("partition", request.name)
        check_job_name(request.name, request.holder)
        check_size(request.size, state.pod)
        check_gcds(request.size, request.num_gcds, request.gcd_sync_replicas)
        if request.name in state.partitions:
            raise AlreadyExists(
                f"partition {request.name!r} already exists; choose another name or `vipu remove partition"
                f" {request.name}` first", resource=("partition", request.name)
            )
        allocation = request.allocation or DEFAULT_ALLOCATION
        if allocation != DEFAULT_ALLOCATION:
            check_name("allocation", allocation)
        self.check_ever_fits(request.size, allocation)
        usable = state.usable_mask(allocation)
        first = place(usable, state.pod.ipus, request.size) if request.first_ipu is None else request.first_ipu
        if first is not None and (first % request.size or block_mask(first, request.size) & ~usable):
            raise ResourceExhausted(
                f"first_ipu {first}: IPUs {first}-{first + request.size - 1} are not an aligned block that is free in"
                f" allocation {allocation}; let placement choose"
            )
        if first is None:
            free, largest = usable.bit_count(), largest_free_block(usable, state.pod.ipus)
            room = (f"no free aligned block of {n_ipus(request.size)} in allocation {allocation}: {n_ipus(free)} free,"
                    f" the largest free block holds {n_ipus(largest)}")
            if place(state.capacity_mask(allocation) & ~state.used_mask, state.pod.ipus, request.size) is not None:
                raise ResourceExhausted(f"{room}; {self._out_of_service(allocation)}", reason="NO_FREE_IPUS",
                                        resource=("allocation", allocation))  # not a partition in the way
            raise ResourceExhausted(f"{room}; remove a partition or ask for a smaller size", reason="NO_FREE_IPUS",
                                    resource=("allocation", allocation))
        now = self.now()
        machine = state.topology.place(first).machine
        cluster = next((c.name for c in state.clusters.values() if any(
            state.agents[a].machine == machine for a in c.agents if a in state.agents)), "")
        pending = Partition(
            name=request.name,
            size=request.size,
            num_gcds=request.num_gcds,
            gcd_sync_replicas=request.gcd_sync_replicas,
            reconfigurable=request.reconfigurable,
            allocation=allocation,
            cluster=cluster,
            owner=request.owner,
            first_ipu=first,
            state=S.PENDING,
            holder=request.holder,
            created_at=now,
            history=[Transition(state=S.PENDING, at=now)],
        )
        # The emulated agents configure routing instantly, so the partition is recorded ACTIVE with both
        # transitions in its history: one write, and no window where its IPUs are placed but not stored.
        partition = self._put(pending.moved_to(S.ACTIVE, now))
        state.used_mask |= block_mask(first, request.size)
        return partition

    def check_ever_fits(self, size: int, allocation: str, field: str = "size") -> None:
        """A size that no aligned block of the allocation could hold even with every partition removed, every drain
        ended and every failure repaired is bad input (INVALID_ARGUMENT), not a lack of room now
        (RESOURCE_EXHAUSTED): waiting or removing partitions would never make it fit. `field`: what the caller
        named the size (a job's is ipus)."""
        capacity = self.state.capacity_mask(allocation)
        known = self._largest.get(allocation)
        if known is not None and known[0] is capacity:
            largest = known[1]
        else:
            largest = largest_free_block(capacity, self.state.pod.ipus)
            self._largest[allocation] = (capacity, largest)
        if size <= largest:
            return
        total = capacity.bit_count()
        if total == 0:
            why = ("it has no agents; use another allocation (`vipu list allocations`)" if allocation != DEFAULT_ALLOCATION
                   else "no cluster holds any agent; an admin creates one (`vipu-admin create cluster`)"
                   if not self.state.clusters
                   else "every agent of a cluster belongs to a named allocation; pass --allocation")
            raise InvalidArgument(f"{field} is {size} but allocation {allocation} has no IPUs: {why}")
        shape = "" if largest == total else f", whose largest aligned block holds {n_ipus(largest)}"
        fix = f"ask for at most {largest}"
        if allocation == DEFAULT_ALLOCATION:  # what a job or partition naming no allocation gets
            shape += f" ({DEFAULT_HOLDS})"
            fix += " or name a larger allocation (`vipu list allocations`)"
        # the figures, for a client that asked in IPU-Machines (vipu submit -N) to say it in nodes
        figures = {"allocation": allocation, "allocation_ipus": str(total), "largest_ipus": str(largest),
                   "ipus_per_machine": str(self.state.pod.machine.ipus)}
        raise InvalidArgument(f"{field} is {size} but allocation {allocation} has {n_ipus(total)}{shape}; {fix}",
                              metadata=figures)

    def _out_of_service(self, allocation: str) -> str:
        """What keeps a size that would fit with every machine of the allocation in service from fitting now, and
        the fix."""
        vacant, drained, failed = self.state.out_of_service(allocation)
        why = []
        if vacant:
            why.append(f"{named('machine', list(map(str, vacant)))} {'has' if len(vacant) == 1 else 'have'} no agent"
                       f" (`vipu-admin create agent NAME --machine {vacant[0]}`)")
        if drained:  # one agent's reason, else where to read them: a refusal stays a line
            said = self.state.agents[drained[0]].reason
            why.append(f"{named('agent', drained)} {'is' if len(drained) == 1 else 'are'} drained"
                       + (f" ({said.text!r}, by {said.user})" if said and len(drained) == 1 else
                          " (`vipu info -R` says why)" if len(drained) > 1 else "")
                       + f" (`vipu-admin resume agent {drained[0]}`)")
        if failed:
            why.append(f"{named('IPU', list(map(str, failed)))} failed"
                       f" (`vipu-admin repair ipus {' '.join(map(str, failed))}`)")
        return f"out of service: {'; '.join(why)}; an admin can bring them back, or ask for a smaller size"

    def get(self, name: str) -> Partition:
        return self.state.get("partition", name)

    def list(self) -> list[Partition]:
        return sorted(self.state.partitions.values(), key=lambda p: natural_key(p.name))

    def remove(self, name: str, force: bool = False) -> Partition:
        partition = self.get(name)
        if partition.holder and not force:
            raise FailedPrecondition(
                f"partition {name} is in use by {partition.holder}; wait for it to end, cancel it, or remove with"
                " force (vipu remove partition --force)", reason="PARTITION_IN_USE", resource=("partition", name)
            )
        now = self.now()
        removed = partition.moved_to(S.REMOVING, now).moved_to(S.REMOVED, now)
        self.journal.commit([], [("partition", name)])
        del self.state.partitions[name]
        self.state.used_mask &= ~block_mask(partition.first_ipu, partition.size)
        return removed

    def reset(self, name: str) -> Partition:
        partition = self.get(name)
        now = self.now()
        resetting = partition.moved_to(S.RESETTING, now)
        failed = sorted(set(partition.ipus) & self.state.failed_ipus)
        if failed:
            which = f"IPU{'' if len(failed) == 1 else 's'} {', '.join(map(str, failed[:8]))}"
            raise FailedPrecondition(f"partition {name} has failed {which}; remove it and create another")
        return self._put(resetting.moved_to(S.ACTIVE, now))

    def acquire(self, name: str, holder: str) -> Partition:
        """Mark a partition in use (a job attached); it then cannot be removed without --force."""
        if not holder:
            raise InvalidArgument("holder is empty; name the job or process using the partition")
        partition = self.get(name)
        if partition.state != S.ACTIVE:
            raise FailedPrecondition(
                f"partition {name} is {partition.state.value}; only an ACTIVE one can be used: reset it, or remove it"
                " and create another"
            )
        if partition.holder and partition.holder != holder:
            raise FailedPrecondition(
                f"partition {name} is already in use by {partition.holder}; wait for it to be released, or create"
                " another partition"
            )
        return self._put(partition.model_copy(update={"holder": holder}))

    def release(self, name: str, holder: str) -> Partition:
        partition = self.get(name)
        if partition.holder != holder:
            raise FailedPrecondition(
                f"partition {name} is held by {partition.holder or 'nobody'}, not {holder}; only its holder can release"
                " it (remove it with force to take it back: vipu remove partition --force)"
            )
        return self._put(partition.model_copy(update={"holder": None}))

    def fail_ipus(self, ipus: list[int], reason: Reason | None = None) -> list[Partition]:
        """An IPU, its links or its machine failed: mark it (why, who and when in `reason`), and fail the
        partitions that hold it. An IPU failed already keeps its first reason."""
        for ipu in ipus:
            if not 0 <= ipu < self.state.pod.ipus:
                raise InvalidArgument(f"ipu {ipu} does not exist; {self.state.pod.name} has IPUs 0 to {self.state.pod.ipus - 1}")
        hit = set(ipus)
        now = self.now()
        failed = [
            p.moved_to(S.FAILED, now)
            for p in self.state.partitions.values()
            if hit & set(p.ipus) and p.state != S.FAILED
        ]
        failures = [
            ("ipu_failure", str(ipu), IpuFailure(name=str(ipu), ipu=ipu, created_at=now, reason=reason))
            for ipu in sorted(hit - self.state.failed_ipus)
        ]
        puts = [("partition", p.name, p) for p in failed] + failures
        self.journal.commit(puts, [])
        self.state.apply(puts, [])
        return failed

    def repair_ipus(self, ipus: list[int], cleaning_mask: int = 0) -> list[int]:
        """Failed IPUs back in service; returns them. FAILED partitions stay FAILED: reset them. Refused whole, as a
        resume of an agent not drained is, if one of them is not failed: there is nothing to repair
        (`cleaning_mask`, the scheduler's teardowns, names their state as the IPU views do)."""
        for ipu in ipus:
            if not 0 <= ipu < self.state.pod.ipus:
                raise InvalidArgument(f"ipu {ipu} does not exist; {self.state.pod.name} has IPUs 0 to {self.state.pod.ipus - 1}")
        if working := [ipu for ipu in dict.fromkeys(ipus) if ipu not in self.state.failed_ipus]:
            raise not_failed(self.state, working, ipus, cleaning_mask)
        repaired = sorted(set(ipus))
        deletes = [("ipu_failure", str(ipu)) for ipu in repaired]
        self.journal.commit([], deletes)
        self.state.apply([], deletes)
        return repaired

    def ipu_statuses(self) -> list[IpuStatus]:
        return ipu_statuses(self.state)
