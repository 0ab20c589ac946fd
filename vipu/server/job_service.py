"""The JobService: Slurm-style commands on the scheduler, each under the controller lock; the dispatcher is woken
after any change that may let a job start, so it starts within one cycle."""

from __future__ import annotations

import json

from vipu.errors import InvalidArgument, PermissionDenied
from vipu.scheduler.spec import load_spec, parse_spec
from vipu.scheduler.states import SHORT, TERMINAL, JobState
from vipu.scheduler.submit import Submission, naming_spec
from vipu.server import job_convert
from vipu.server.status import rpc
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc
from vipu.validation import MAX_SPECS_PER_CALL

BY_CODE = {code: state for state, code in SHORT.items()}
NO_IDS = "no job ids given; name at least one job (vipu queue lists them)"


def states_of(values) -> set[JobState] | None:
    if not values:
        return None
    out = set()
    for value in values:
        key = value.upper()
        state = BY_CODE.get(key) or JobState.__members__.get(key)
        if state is None:
            names = ", ".join(f"{s.value} ({c})" for s, c in SHORT.items())
            raise InvalidArgument(f"state {value!r} is not a job state; use one of {names}")
        out.add(state)
    return out


def label(request: j.SubmitJobRequest) -> str:
    """Where a spec came from, for its messages: cut short, since a refusal travels in the status's metadata (a
    20 kB source made the refusal a transport error)."""
    source = request.source
    return source if len(source) <= 200 else f"{source[:200]}..."


def overrides_of(text: str) -> dict:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidArgument("overrides_json is not valid JSON; send an object of spec fields") from None
    if not isinstance(data, dict):
        raise InvalidArgument("overrides_json must be a JSON object of spec fields")
    return data


class JobService(job_pb2_grpc.JobServiceServicer):
    def __init__(self, runtime):
        self.rt = runtime

    def _changed(self, result):
        self.rt.dispatcher.wake()
        return result

    def _submission(self, request, identity) -> Submission:
        """A SubmitJobRequest as the scheduler takes it, with every check that needs the caller (not the lock)."""
        source = label(request)
        named = source or "job spec"
        spec = load_spec(request.spec, named)
        overrides = overrides_of(request.overrides_json)
        claimed = overrides.get("user", spec.user if "user" in spec.model_fields_set else None)
        if claimed is None:
            overrides["user"] = identity.name or spec.user
        elif not identity.sees(claimed):
            raise PermissionDenied(f"user {identity.name} cannot submit jobs as {claimed}; leave user out (the spec's"
                                   " field and --user) or ask an admin")
        if overrides:  # a field refused here may have come from the flags (overrides_json), not the file
            given = f"{named} with its overrides" if request.overrides_json else named
            spec = parse_spec({**spec.model_dump(exclude_unset=True), **overrides}, given)
        if spec.nice < 0 and not identity.admin:  # as Slurm: anyone may lower a job's priority, only admins raise it
            raise PermissionDenied(f"nice is {spec.nice}: only an admin may give a negative nice (it raises the job's"
                                   " priority over everyone's); give 0 or more")
        if spec.output and self.rt.secure:  # it would write any file the controller may, for any user
            raise PermissionDenied(
                "output: a --secure controller writes no files for its users (it runs as one OS user, unlike slurmd);"
                " leave output out and read the run with `vipu show job` and `vipu logs`")
        return Submission(spec, request.request_id or None, source)

    def _submit(self, requests, context) -> list[j.SubmitJobResponse]:
        identity = self.rt.identity(context)
        submissions = []
        for k, request in enumerate(requests):
            with naming_spec(k, len(requests), label(request)):
                submissions.append(self._submission(request, identity))
        with self.rt.lock:
            for k, x in enumerate(submissions):
                if x.spec.allocation:
                    with naming_spec(k, len(submissions), x.source):
                        users = self.rt.controller.admin.get_allocation(x.spec.allocation).users
                        identity.check_allocation(x.spec.allocation, users)
                        # as create partition: a job its allocation could never hold would wait forever
                        self.rt.controller.partitions.check_ever_fits(x.spec.ipus, x.spec.allocation, "ipus")
            done = self.rt.scheduler.submit_many(submissions, self.rt.now())
        self.rt.metrics.submissions.inc(sum(len(d.jobs) for d in done if not d.duplicate))
        # a held job cannot start until it is released (which wakes the dispatcher), so a cycle now would find
        # nothing to do: in a burst of held submissions it would only compete with them for the lock
        if not all(job.held for d in done for job in d.jobs):
            self.rt.dispatcher.wake()
        return [j.SubmitJobResponse(job_ids=[x.id for x in d.jobs], duplicate=d.duplicate) for d in done]

    @rpc
    def SubmitJob(self, request, context):
        return self._submit([request], context)[0]

    @rpc
    def SubmitJobs(self, request, context):
        """Several SubmitJobs in one call and one commit, or none (scheduler.submit_many)."""
        if not request.jobs:
            raise InvalidArgument("jobs is empty; give at least one spec")
        if len(request.jobs) > MAX_SPECS_PER_CALL:
            raise InvalidArgument(f"jobs has {len(request.jobs):,} specs; give at most {MAX_SPECS_PER_CALL:,} in one"
                                  " call and the rest in further calls")
        return j.SubmitJobsResponse(jobs=self._submit(request.jobs, context))

    def _own(self, ids, context) -> None:
        identity = self.rt.identity(context)
        with self.rt.lock:
            owners = [(i, self.rt.scheduler.job(i).user) for i in ids]
        for job_id, owner in owners:
            identity.check_owner("job", str(job_id), owner)

    @rpc
    def ListJobs(self, request, context):
        identity = self.rt.identity(context)
        wanted = states_of(request.states)
        users = set(request.users)
        ids = set(request.ids)
        def keep(x) -> bool:
            return ((not users or x.user in users) and identity.sees(x.user) and (wanted is None or x.state in wanted)
                    and (not ids or x.id in ids or x.array_job_id in ids))

        with self.rt.lock:  # a brief listing (a table) shows no priority, so it is worked out only for the full one
            now = None if request.brief else self.rt.now()
            reply = job_convert.jobs(self.rt.scheduler.queue(keep, now), request.brief)
        return self._with_results(reply, request)

    def _with_results(self, reply: j.ListJobsResponse, request) -> j.ListJobsResponse:
        """A full listing of named jobs (`vipu show job` of an array: every task, in one call) carries each training
        job's results as GetJob does; a listing of everyone's jobs does not read thousands of records for it."""
        if request.ids and not request.brief:
            self._add_results(reply.jobs)
        return reply

    def _add_results(self, messages) -> None:
        for x in messages:
            record = self.rt.training.result(x.id)
            if record is not None:
                x.result_json = json.dumps(record.summary())

    @rpc
    def GetJob(self, request, context):
        self._own([request.id], context)
        with self.rt.lock:
            reply = job_convert.job(self.rt.scheduler.job(request.id, self.rt.now()))
        self._add_results([reply])
        return reply

    @rpc
    def JobLogs(self, request, context):
        self._own([request.id], context)
        record = self.rt.training.result(request.id)
        return j.JobLogsResponse(lines=self.rt.training.log_lines(request.id),
                                 record_json=json.dumps(record.run_data()) if record else "")

    def _each(self, ids, action, context, check=None):
        """action(id, now) on each job, under one lock; check(id), if given, first on all of them, so a refusal
        leaves every job as it was."""
        if not ids:
            raise InvalidArgument(NO_IDS)
        self._own(ids, context)
        with self.rt.lock:
            now = self.rt.now()
            for job_id in ids if check else ():
                check(job_id)
            for job_id in ids:
                self.rt.dispatcher.apply(action(job_id, now) or [], now)
            return job_convert.jobs(self.rt.scheduler.job(i, now) for i in ids)

    @rpc
    def CancelJobs(self, request, context):
        ids, users = list(request.ids), list(request.users)
        if not ids and not users:
            raise InvalidArgument(NO_IDS)
        identity = self.rt.identity(context)
        for user in users:
            if not identity.sees(user):
                raise PermissionDenied(f"user {identity.name} cannot cancel the jobs of {user}; only an admin may")
        self._own(ids, context)
        # one all-or-nothing cancel: a refusal leaves every job as it was, an array named and its user's tasks are
        # each taken once, and no job named starts between the cancels of the others (scancel 15 16 20 with 20
        # pending got a partition and ran once 15 and 16 had freed theirs)
        with self.rt.lock:
            now = self.rt.now()
            theirs = [i for i in self.rt.scheduler.active_of(users) if i not in ids]
            self.rt.dispatcher.apply(self.rt.scheduler.cancel(ids, now, request.single, users), now)
            reply = job_convert.jobs(self.rt.scheduler.job(i, now) for i in ids + theirs)
        return self._changed(reply)

    @rpc
    def HoldJobs(self, request, context):
        """A user hold (JobHeldUser), or with request.admin an admin hold (JobHeldAdmin, Slurm's hold by an
        operator). Without --secure every caller is an admin, so the kind is always asked for explicitly: a plain
        hold is a user hold whoever places it."""
        admin = request.admin
        if admin:
            identity = self.rt.identity(context)
            if not identity.admin:
                raise PermissionDenied(
                    f"user {identity.name} is not an admin, so cannot place an admin hold (JobHeldAdmin); drop --admin"
                    " for a user hold"
                )
        return self._changed(
            self._each(list(request.ids),
                       lambda i, now: self.rt.scheduler.hold(i, now, admin=admin, single=request.single) and None,
                       context)
        )

    @rpc
    def ReleaseJobs(self, request, context):
        """Releases user holds; admin holds only for an admin caller (without --secure: every caller). A non-admin
        whose jobs include an admin-held one is refused before anything is released."""
        admin = self.rt.identity(context).admin
        scheduler = self.rt.scheduler
        return self._changed(self._each(
            list(request.ids), lambda i, now: scheduler.release(i, now, admin=admin, single=request.single) and None,
            context, check=lambda i: scheduler.check_release(i, admin, request.single),
        ))

    @rpc
    def RequeueJobs(self, request, context):
        return self._changed(self._each(
            list(request.ids), lambda i, now: self.rt.scheduler.requeue(i, now, request.single), context))

    @rpc
    def History(self, request, context):
        identity = self.rt.identity(context)
        wanted = states_of(request.states)
        users, ids = set(request.users), set(request.ids)

        def keep(x) -> bool:
            return ((not users or x.user in users) and identity.sees(x.user)
                    and (not ids or x.id in ids or x.array_job_id in ids))

        with self.rt.lock:  # like sacct: ended jobs by default
            out = self.rt.scheduler.history(keep, wanted or TERMINAL, request.duplicates, max(request.limit, 0))
        return self._with_results(job_convert.jobs(out, request.brief), request)

    @rpc
    def ClusterInfo(self, request, context):
        with self.rt.lock:
            state = self.rt.controller.state
            rows = self.rt.scheduler.info(state.job_masks()[0], state.drained_mask, state.draining_mask)
            table = self.rt.scheduler.table
            return j.ClusterInfoResponse(
                pod=state.pod.name,
                ilds=[
                    j.Pod64Info(ild=r.ild, idle=r.idle, allocated=r.allocated, failed=r.failed, total=r.ipus,
                                drained=r.drained, draining=r.draining)
                    for r in rows
                ],
                pending_jobs=len(table.pending),
                running_jobs=len(table.running),
            )

    @rpc
    def Priorities(self, request, context):
        identity = self.rt.identity(context)
        if request.ids:  # someone else's job is refused as theirs, before whether it is pending is told
            self._own(list(request.ids), context)
        with self.rt.lock:
            rows = self.rt.scheduler.priorities(self.rt.now(), ids=list(request.ids) or None, single=request.single)
            jobs = self.rt.scheduler.table.jobs
            return j.PrioritiesResponse(
                jobs=[
                    j.PriorityFactors(
                        job_id=r.job_id, user=r.user, priority=r.total, age=r.age, fairshare=r.fairshare,
                        job_size=r.job_size, qos=r.qos, nice=r.nice, array_job_id=jobs[r.job_id].array_job_id,
                        array_task_id=jobs[r.job_id].array_task_id,
                    )
                    for r in rows
                    if identity.sees(r.user)
                ]
            )
