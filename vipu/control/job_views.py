"""Slurm's views of the queue (squeue, sacct, sprio, sinfo, scontrol show job) and `vipu logs`, with who may see
what; its commands are job_ops.py.

Why no lock: every view runs on the snapshot (snapshot.py), so listing never waits for a submit or a cancel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple

from vipu.access import Identity
from vipu.control.ended_jobs import history_listing, shown, stored_job
from vipu.control.job_logs import LogMark, Logs, read_logs
from vipu.control.snapshot import Page, Snapshot
from vipu.errors import NotFound
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.partition.ipu_status import completing_nodes, unavailable_nodes
from vipu.partition.node_names import hostlist
from vipu.partition.placement import block_mask, largest_free_block
from vipu.partition.rules import job_holder, job_of_partition
from vipu.partition.pod_state import PodState
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.node_requests import NodeNames
from vipu.scheduler.policies.base import NODE_NOT_AVAIL, RESOURCES
from vipu.scheduler.view import Pod64Info

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane


class ClusterInfo(NamedTuple):
    pod: str
    ilds: list[Pod64Info]
    pending_jobs: int
    running_jobs: int
    qos: list[str]  # the QOS a job may ask for
    completing_jobs: int = 0  # ended, their programs still ending (KillWait): their IPUs completing, still held
    completing_nodes: str = ""  # the machines sinfo shows comp (those jobs' runs torn down there), a host list


class JobViews:
    def __init__(self, plane: ControlPlane):
        self.plane = plane

    def queue(self, identity: Identity, users: Iterable[str] = (), states: set[JobState] | None = None,
              ids: Iterable[int] = (), priority: bool = False, page_size: int = 0, page_token: str = "") -> Page:
        """squeue: running jobs by start time, then pending jobs in priority order; `priority`: each pending job
        with its priority now (a table shows none, so it is worked out only when asked)."""
        users, ids = set(users), set(ids)

        def keep(x: Job) -> bool:
            return ((not users or x.user in users) and identity.sees(x.user) and (states is None or x.state in states)
                    and (not ids or x.id in ids or x.array_job_id in ids))

        now = self.plane.now() if priority else None
        key = repr(("queue", identity, sorted(users), sorted(states or ()), sorted(ids), priority))
        snap = self.plane.read()
        named = naming_unavailable(snap.pod, snap.queue.table.nodes)
        plane = self.plane  # (its estimates as of when the listing is made: a claim's is never in the past)
        return plane.page(key, lambda snap: snap.queue.queue_rows(keep, now, plane.now()), page_size, page_token,
                          present=lambda row: named(row.decorated()))

    def history(self, identity: Identity, users: Iterable[str] = (), states: set[JobState] | None = None,
                ids: Iterable[int] = (), duplicates: bool = False, limit: int = 0, page_size: int = 0,
                page_token: str = "", since: float | None = None) -> Page:
        """sacct: ended jobs by default (`states` widens it), in the order they ended; `limit`: the latest only;
        `since`: ended at or after it (jobs not ended are kept). Jobs past min_job_age come from the store."""
        users, ids = set(users), set(ids)

        def keep(x: Job) -> bool:
            return ((not users or x.user in users) and identity.sees(x.user)
                    and (not ids or x.id in ids or x.array_job_id in ids))

        store = self.plane.store
        key = repr(("history", identity, sorted(users), sorted(states or ()), sorted(ids), duplicates, limit, since))
        return self.plane.page(key, lambda snap: history_listing(
            snap.queue, store, keep, identity, users, ids, states or TERMINAL, duplicates, max(limit, 0), since),
            page_size, page_token, present=shown(store))

    def unknown_users(self, users: Iterable[str]) -> list[str]:
        """The users named that the controller knows nothing of (squeue's "Invalid user", which Slurm asks of the
        OS's accounts): under --secure, no account has the name; without it, where a job may name any user, no job of
        theirs is queued or ended. Who may see their jobs plays no part: a user whose jobs are hidden still exists."""
        if self.plane.secure:
            accounts = {u.name for u in self.plane.admin.users()}
            return [u for u in users if u not in accounts]
        known = {job.user for job in self.plane.read().queue.table.jobs.values()}
        known |= self.plane.store.history_users([u for u in users if u not in known])  # one read for every name
        return [u for u in users if u not in known]

    def job(self, job_id: int, identity: Identity) -> Job:
        """scontrol show job: with its reason, estimated start and priority now; a job past min_job_age as the
        history has it."""
        snap = self.plane.read()
        table = snap.queue.table
        if job_id not in table.jobs:
            stored = stored_job(self.plane.store, job_id)
            if stored is not None:
                identity.check_owner("job", str(job_id), stored.user)
                return stored
            if 0 < job_id < table.next_id and job_id not in table.quarantined:  # given once, yet in no record
                raise NotFound(f"job {job_id} is in neither the queue nor the job history: its record was lost (a"
                               " repairing start may have moved it aside under another name: `sqlite3"
                               f" {self.plane.store.path} 'SELECT kind, name, error FROM quarantine'` lists them)",
                               resource=("job", str(job_id)))
        job = self._seen(job_id, identity)
        return naming_unavailable(snap.pod, table.nodes)(snap.queue.job(job.id, self.plane.now()))

    def _seen(self, job_id: int, identity: Identity) -> Job:
        """The job, if the caller may see it (another user's is refused as theirs, as scancel does)."""
        job = self.plane.read().queue.table.get(job_id)
        identity.check_owner("job", str(job_id), job.user)
        return job

    def record(self, job_id: int):
        """What the job's workload recorded of its latest run (a training result), or None."""
        runner = self._runner(job_id)
        return runner.record(job_id) if runner is not None else None

    def logs(self, job_id: int, identity: Identity, follow: bool = False, after: LogMark | None = None,
             partial: bool = False) -> Logs:
        """`vipu logs` (a job past min_job_age too); -f: `follow`, from `after` on, `partial` lines too
        (job_logs.py)."""
        return read_logs(self.plane, self.job(job_id, identity), follow, after, partial)

    def _runner(self, job_id: int):
        job = self.plane.read().queue.table.jobs.get(job_id) or stored_job(self.plane.store, job_id)
        return self.plane.runners.get(job.spec.workload.kind) if job is not None else None

    def info(self) -> ClusterInfo:
        """sinfo: idle, allocated, completing, draining, drained and failed IPUs per Pod64, and the queue's size."""
        snap = self.plane.read()
        table = snap.queue.table
        rows = snap.queue.info(snap.available_mask, snap.pod.drained_mask, snap.pod.draining_mask,
                               snap.completing_mask())
        qos = sorted(set(snap.queue.config.qos) - snap.queue.retired_qos)
        return ClusterInfo(snap.pod.pod.name, rows, len(table.pending), len(table.running), qos,
                           len(snap.queue.completing()), hostlist(completing_nodes(snap.pod, table.cleaning_mask)))

    def priorities(self, identity: Identity, ids: list[int], single: bool, page_size: int = 0,
                   page_token: str = "") -> Page:
        """sprio: every pending job the caller may see (or the ones named), highest first, each with its job."""
        snap = self.plane.read()
        for job_id in ids:  # someone else's job is refused as theirs, before whether it is pending is told
            identity.check_owner("job", str(job_id), snap.queue.table.get(job_id).user)
        now = self.plane.now()

        def make(snap: Snapshot) -> list[tuple[PriorityBreakdown, Job]]:
            rows = snap.queue.priorities(now, ids=ids or None, single=single)
            jobs = snap.queue.table.jobs
            return [(r, jobs[r.job_id]) for r in rows if identity.sees(r.user)]

        return self.plane.page(repr(("priorities", identity, sorted(ids), single)), make, page_size, page_token,
                               snap)


RESERVED = f"{NODE_NOT_AVAIL}, May be reserved for other job"  # slurmctld's, for nodes a reservation holds


def naming_unavailable(pod: PodState, nodes: NodeNames | None = None) -> Callable[[Job], Job]:
    """A pending job's ReqNodeNotAvail as squeue shows it, with the nodes of its allocation that take no new work
    hostlist-compressed (ReqNodeNotAvail, UnavailableNodes:ag[03,07]), worked out once per allocation (of a job
    with a nodelist or exclude, only those it may use); a job waiting for IPUs that no job's end will free, held by
    partitions made by hand, as slurmctld shows one waiting for nodes a reservation holds (RESERVED); other jobs as
    they are."""
    named: dict[tuple[str, str | None, str | None, int], str] = {}
    reserved = partitions_by_hand(pod)

    def shown(job: Job) -> Job:
        if job.reason == RESOURCES and job.spec.nodelist is None and job.spec.exclude is None:
            return job.updated({"reason": RESERVED}) if reserved(job.spec.allocation, job.spec.ipus) else job
        if job.reason != NODE_NOT_AVAIL:
            return job
        spec = job.spec
        allocation = spec.allocation or DEFAULT_ALLOCATION
        own = nodes is not None and (spec.nodelist is not None or spec.exclude is not None)
        key = (allocation, spec.nodelist, spec.exclude, spec.ipus) if own else (allocation, None, None, 0)
        text = named.get(key)
        if text is None:
            names = unavailable_nodes(pod, allocation)
            if own:
                mask, per = nodes.mask(spec), nodes.per_machine  # type: ignore[union-attr]
                machine = nodes.names  # type: ignore[union-attr]
                names = [n for n in names if n in machine and mask >> (machine[n] * per) & ((1 << per) - 1)]
            text = named[key] = hostlist(names)
        return job.updated({"reason": f"{NODE_NOT_AVAIL}, UnavailableNodes:{text}"}) if text else job

    return shown


def partitions_by_hand(pod: PodState) -> Callable[[str | None, int], bool]:
    """Whether partitions made by hand (no job's, so no time limit ends them) leave an allocation no aligned block
    of a size, its failed, drained and agentless machines counted back: a job of that size waits for one of them
    to be removed, not for a job to end. Worked out once per allocation."""
    largest: dict[str, int] = {}

    def held(part) -> bool:
        job = job_of_partition(part.name)
        return job is None or part.holder != job_holder(job)

    def reserved(allocation: str | None, ipus: int) -> bool:
        allocation = allocation or DEFAULT_ALLOCATION
        if allocation != DEFAULT_ALLOCATION and allocation not in pod.allocations:
            return False  # (removed under a snapshot taken before: the queue refuses that while a job asks for it)
        if allocation not in largest:
            taken = 0
            for p in pod.partitions.values():
                if p.allocation == allocation and held(p):
                    taken |= block_mask(p.first_ipu, p.size)
            largest[allocation] = largest_free_block(pod.capacity_mask(allocation) & ~taken, pod.pod.ipus) \
                if taken else pod.pod.ipus
        return largest[allocation] < ipus

    return reserved
