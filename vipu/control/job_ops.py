"""Slurm's commands on the queue (sbatch, scancel, scontrol hold/release/requeue/update), with who may do what; its
views (squeue, sacct, sprio, sinfo) are job_views.py.

Why submissions are checked before the lock: parsing, the caller's rights, and a workload kind's admission check
(a training layout's fit search can take seconds) need nothing the lock guards, so they run while others submit and
list; under the lock only what reads the queue is left: allocations, dependencies, ids, the commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple

from vipu.access import Identity
from vipu.control.job_updates import update_job
from vipu.control.signals import KILL, send_signal
from vipu.control.spec_cache import SpecCache
from vipu.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.scheduler.expected_start import Expectation
from vipu.scheduler.job_filter import NO_FILTER, JobFilter
from vipu.scheduler.node_requests import check_nodes_in_allocation
from vipu.scheduler.job_record import Job
from vipu.scheduler.updates import JobUpdate
from vipu.scheduler.job_spec import JobSpec, parse_spec
from vipu.scheduler.job_states import JobState
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
