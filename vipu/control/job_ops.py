"""Slurm's commands on the queue (sbatch, scancel, scontrol hold/release/requeue) and its views (squeue, sacct,
sprio, sinfo), with who may do what.

Why submissions are checked before the lock: parsing, the caller's rights, and a workload kind's admission check
(a training layout's fit search can take seconds) need nothing the lock guards, so they run while others submit and
list; under the lock only what reads the queue is left: allocations, dependencies, ids, the commit. Views run on the
snapshot (snapshot.py) and never take the lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple

from vipu.access import Identity
from vipu.control.ended_jobs import history_listing, shown, stored_job
from vipu.control.job_logs import LogMark, Logs, read_logs
from vipu.control.job_updates import update_job
from vipu.control.signals import KILL, send_signal
from vipu.control.spec_cache import SpecCache
from vipu.control.snapshot import Page, Snapshot
from vipu.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.partition.ipu_status import completing_nodes, unavailable_nodes
from vipu.partition.node_names import hostlist
from vipu.partition.pod_state import PodState
from vipu.scheduler.expected_start import Expectation
from vipu.scheduler.job_filter import NO_FILTER, JobFilter
from vipu.scheduler.node_requests import NodeNames, check_nodes_in_allocation
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.updates import JobUpdate
from vipu.scheduler.view import Pod64Info
from vipu.scheduler.job_spec import JobSpec, parse_spec
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.policies.base import NODE_NOT_AVAIL
from vipu.scheduler.reasons import Row
from vipu.scheduler.submission import Submission, Submitted, check_ipus, naming_spec, resolve

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

NO_IDS = "no job ids given; name at least one job (vipu queue lists them)"
# the request's own field names: the CLI says its flags before it calls (cancel_command.py)
NO_IDS_OR_FILTERS = ("ids is empty and no filter is given; name jobs in ids, or select them with filters such as users,"
                     " names or states (ListJobs lists them)")


class SubmitRequest(NamedTuple):
    """One spec as a client sends it: its text (or, typed, the mapping it stands for), fields set by flags, a retry
    key, and where it came from."""

    spec: bytes | str | dict
    overrides: dict
    request_id: str | None = None
    source: str = ""  # a file name, for messages
    held: bool = False  # queued held, the spec's hold unchanged (the CLI's own hold, not its user's)


class ClusterInfo(NamedTuple):
    pod: str
    ilds: list[Pod64Info]
    pending_jobs: int
    running_jobs: int
    qos: list[str]  # the QOS a job may ask for
    completing_jobs: int = 0  # ended, their programs still ending (KillWait): their IPUs completing, still held
    completing_nodes: str = ""  # the machines sinfo shows comp (those jobs' runs torn down there), a host list


class JobOps:
    def __init__(self, plane: ControlPlane):
        self.plane = plane
        self.specs = SpecCache()

    # -- commands ---------------------------------------------------------------------------------------------
    def submit(self, requests: list[SubmitRequest], identity: Identity) -> list[Submitted]:
        """Queue every spec or none (sbatch; several at once for `vipu submit a.yaml b.yaml`)."""
        plane = self.plane
        specs = []
        for k, request in enumerate(requests):
            with naming_spec(k, len(requests), request.source):
                specs.append(self._checked(request, identity))
        with plane.lock.changing():
            for k, (request, spec) in enumerate(zip(requests, specs)):
                with naming_spec(k, len(requests), request.source):
                    self._check_allocation(spec, identity)
            uids = {user: plane.uid(user) for user in {spec.user for spec in specs}}  # getpwnam, ~80 us: once a user
            done = plane.scheduler.submit_many(
                [Submission(spec, r.request_id, r.source, r.held, uids[spec.user])
                 for r, spec in zip(requests, specs)], plane.now())
        plane.metrics.submissions.inc(sum(len(d.jobs) for d in done if not d.duplicate))
        # a held job cannot start until it is released (which wakes the loop), so a step now would find nothing to
        # do: in a burst of held submissions it would only compete with them for the lock
        if not all(job.held for d in done for job in d.jobs):
            plane.changed()
        return done

    def test_only(self, request: SubmitRequest, identity: Identity) -> Expectation:
        """sbatch --test-only: every check a submit makes, then when the job would start if queued now, worked out
        on a snapshot (the lock is held only for the allocation's check); nothing is queued."""
        spec = self._checked(request, identity)
        with self.plane.lock:
            self._check_allocation(spec, identity)
        snap = self.plane.read()
        return snap.queue.expected_start(spec, self.plane.now(), snap.available_mask, snap.allowed_masks)

    def _check_allocation(self, spec: JobSpec, identity: Identity) -> None:
        """The caller may use the allocation the spec names, and it (else the default allocation) could hold the
        job, on the nodes it names if it names any (call under the lock)."""
        controller = self.plane.controller
        if spec.allocation:
            identity.check_allocation(spec.allocation, controller.admin.get_allocation(spec.allocation).users)
        # as create partition, and as sbatch refuses more nodes than the partition has ("Requested node configuration
        # is not available"): a job its allocation could never hold, failed and drained IPUs back, would wait forever.
        # A size no Pod of this one's takes is told first, as the Pod's (as resolve() tells it)
        check_ipus(spec, self.plane.pod)
        controller.partitions.check_ever_fits(spec.ipus, spec.allocation or DEFAULT_ALLOCATION, "ipus")
        if spec.nodelist is not None or spec.exclude is not None:
            check_nodes_in_allocation(spec, self.plane.scheduler.table.nodes, controller.state)

    def _checked(self, request: SubmitRequest, identity: Identity) -> JobSpec:
        """The spec as the scheduler takes it, with every check that needs the caller or may take long, before the
        lock: its shape, the caller's rights, what the Pod and the scheduler config allow, and its kind's own."""
        named = request.source or "job spec"
        spec = parse_spec(request.spec, named) if isinstance(request.spec, dict) else self.specs.load(request.spec, named)
        overrides = dict(request.overrides)
        claimed = overrides.get("user", spec.user if "user" in spec.model_fields_set else None)
        if claimed is None:
            overrides["user"] = identity.name or spec.user
        elif not identity.sees(claimed):
            raise PermissionDenied(f"user {identity.name} cannot submit jobs as {claimed}; leave user out (the spec's"
                                   " field and --user) or ask an admin")
        if overrides:  # a field refused here may have come from the flags (overrides_json), not the file
            given = f"{named} with its overrides" if set(request.overrides) - {"submit_dir"} else named
            spec = self.specs.with_fields(request.spec, spec, overrides, given)
        if spec.nice < 0 and not identity.admin:  # as Slurm: anyone may lower a job's priority, only admins raise it
            raise PermissionDenied(f"nice is {spec.nice}: only an admin may give a negative nice (it raises the job's"
                                   " priority over everyone's); give 0 or more", reason="ADMIN_REQUIRED")
        kind = self.plane.kinds.get(spec.workload.kind)
        if kind is None:
            raise InvalidArgument(f"workload kind {spec.workload.kind!r} does not run on this controller; use one of"
                                  f" {', '.join(self.plane.kinds)}")
        if spec.error is not None and not kind.streams:
            raise InvalidArgument(f"a {kind.name} workload writes no stderr, so it takes no error file (a command"
                                  " workload's does); leave error out", field="spec.error")
        if kind.streams:  # a program runs as its user's Unix account under --secure, and opens its files as it
            self.plane.run_as(spec.user, self.plane.read().pod)
        elif spec.output and self.plane.secure:  # the controller would write any file it may, for any user
            raise PermissionDenied(
                "output: a --secure controller writes no files for its users' built-in workloads (it runs as one OS"
                " user); leave output out and read the run with `vipu show job` and `vipu logs`")
        if not self.plane.secure:  # a file the controller's user would open: refused now if its run could only fail
            self.plane.executor.outputs.check_submit(spec, kind.streams)
        if kind.admit is not None:
            resolve(spec, self.plane.pod, self.plane.scheduler.config)  # its refusals first, as a submit gives them
            kind.admit(spec, self.plane.pod)
        return spec

    def _owned(self, ids: Iterable[int], identity: Identity) -> None:
        """Refuse (naming it) a job the caller may not act on; call under the lock."""
        table = self.plane.scheduler.table
        for job_id in ids:
            identity.check_owner("job", str(job_id), table.get(job_id).user)

    def cancel(self, ids: list[int], match: JobFilter, single: bool, identity: Identity) -> list[Job]:
        """scancel: the jobs named (an array id: its active tasks, unless `single`), narrowed by the filters, or with
        no id every active job the caller may see that matches them; all or nothing. Returns the jobs named, or
        those the filters chose."""
        if not ids and not match:
            raise InvalidArgument(NO_IDS_OR_FILTERS)
        self._check_users(match, identity, "cancel")
        plane = self.plane
        # one all-or-nothing cancel: a refusal leaves every job as it was, and no job named starts between the
        # cancels of the others (scancel 15 16 20 with 20 pending got a partition and ran once 15 and 16 had freed
        # theirs)
        with plane.lock.changing():
            self._owned(ids, identity)
            now = plane.now()
            chosen = ids or plane.scheduler.matching(match, identity.sees)
            if chosen:  # jobs the filters chose match them already: not checked a second time
                plane.driver.apply(plane.scheduler.cancel(chosen, now, single or not ids, match if ids else NO_FILTER,
                                                          uid=plane.uid(identity.name)), now)
            jobs = [plane.scheduler.job(i, now) for i in chosen]
        plane.changed()
        return jobs

    def signal(self, ids: list[int], match: JobFilter, single: bool, signal: int, identity: Identity,
               to: str = "children") -> list[Job]:
        """scancel --signal: the signal to the running programs chosen as cancel chooses jobs, `to` which of their
        processes (signals.py). SIGKILL but to the script alone is a cancel, as Slurm's (job_mgr.c job_signal:
        the job ends CANCELLED, not FAILED by the signal)."""
        if not ids and not match:
            raise InvalidArgument(NO_IDS_OR_FILTERS)
        if signal == KILL and to != "batch":
            return self.cancel(ids, match, single, identity)
        self._check_users(match, identity, "signal")
        return send_signal(self.plane, ids, match, single, signal, identity, to)

    def update(self, job_id: int, update: JobUpdate, single: bool, identity: Identity) -> list[Job]:
        """scontrol update job (job_updates.py)."""
        return update_job(self.plane, job_id, update, single, identity)

    @staticmethod
    def _check_users(match: JobFilter, identity: Identity, verb: str) -> None:
        for user in sorted(match.users):
            if not identity.sees(user):
                raise PermissionDenied(f"user {identity.name} cannot {verb} the jobs of {user}; only an admin may")

    def hold(self, ids: list[int], admin: bool, single: bool, identity: Identity) -> list[Job]:
        """A user hold (JobHeldUser), or with `admin` an admin hold (JobHeldAdmin, Slurm's hold by an operator).
        Without --secure every caller is an admin, so the kind is always asked for: a plain hold is a user hold."""
        if admin and not identity.admin:
            raise PermissionDenied(f"user {identity.name} is not an admin, so cannot place an admin hold"
                                   " (JobHeldAdmin); drop admin (--admin) for a user hold", reason="ADMIN_REQUIRED")
        return self._each(ids, identity, lambda i, now: self.plane.scheduler.hold(i, now, admin=admin, single=single))

    def release(self, ids: list[int], single: bool, identity: Identity) -> list[Job]:
        """Releases user holds; admin holds only for an admin caller (without --secure: every caller). A non-admin
        whose jobs include an admin-held one is refused before anything is released."""
        s, admin = self.plane.scheduler, identity.admin

        def check(job_id: int) -> None:
            s.check_release(job_id, admin, single)
            self._check_output(job_id, single)

        return self._each(ids, identity, lambda i, now: s.release(i, now, admin=admin, single=single), check=check)

    def _check_output(self, job_id: int, single: bool) -> None:
        """FailedPrecondition if a held job's run would fail at once on its output file: a program's (one left from
        an earlier state's job: vipu submit holds such a job, walk22d) or a built-in workload's (its folder gone
        since the submit) alike. Released, it could only fail; kept held, its user mends the folder or file and
        releases it, the job not lost."""
        plane = self.plane
        for job in plane.scheduler.named_jobs([job_id], single, JobFilter(), "release"):
            if not (job.held and job.state is JobState.PENDING):
                continue
            runner = plane.runners.get(job.spec.workload.kind)
            why = runner.output_refusal(job) if hasattr(runner, "output_refusal") else \
                plane.executor.output_refusal(job)
            if why:
                raise FailedPrecondition(f"job {job.display_id} stays held: {why}; then `vipu release"
                                         f" {job.display_id}`")

    def requeue(self, ids: list[int], single: bool, identity: Identity, hold: bool = False) -> list[Job]:
        return self._each(ids, identity, lambda i, now: self.plane.scheduler.requeue(i, now, single, hold))

    def _each(self, ids: list[int], identity: Identity, action: Callable, check: Callable | None = None) -> list[Job]:
        """action(id, now) on each job, under one lock; check(id), if given, first on all of them, so a refusal
        leaves every job as it was. An action's effects (list) are carried out; a job it returns is not."""
        if not ids:
            raise InvalidArgument(NO_IDS)
        plane = self.plane
        with plane.lock.changing():
            self._owned(ids, identity)
            now = plane.now()
            for job_id in ids if check else ():
                check(job_id)
            for job_id in ids:
                effects = action(job_id, now)
                if isinstance(effects, list):
                    plane.driver.apply(effects, now)
            jobs = [plane.scheduler.job(i, now) for i in ids]
        plane.changed()
        return jobs

    # -- views ------------------------------------------------------------------------------------------------
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


def naming_unavailable(pod: PodState, nodes: NodeNames | None = None) -> Callable[[Job], Job]:
    """A pending job's ReqNodeNotAvail as squeue shows it, with the nodes of its allocation that take no new work
    hostlist-compressed (ReqNodeNotAvail, UnavailableNodes:ag[03,07]), worked out once per allocation (of a job
    with a nodelist or exclude, only those it may use); other jobs as they are."""
    named: dict[tuple[str, str | None, str | None, int], str] = {}

    def shown(job: Job) -> Job:
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
