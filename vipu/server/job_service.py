"""The JobService: Slurm-style commands and views, each converted, handed to the control plane, converted back."""

from __future__ import annotations

import json

from vipu.client.messages import timestamp
from vipu.control.job_ops import SubmitRequest
from vipu.errors import InvalidArgument, VipuError
from vipu.scheduler.job_states import SHORT, JobState
from vipu.server import job_convert
from vipu.server.auth import identity
from vipu.server.status import rpc
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc
from vipu.validation import MAX_SPEC_BYTES, MAX_SPECS_PER_CALL

TARGETS = {j.SIGNAL_BATCH: "batch", j.SIGNAL_FULL: "full"}  # scancel -b, -f; else its default (stepd.command)

BY_CODE = {code: state for state, code in SHORT.items()}


def users_of(request, caller) -> list[str]:
    """A listing's user filter: the users named, and with `me` the caller as the controller knows it (its access
    key's owner under --secure, not a name the client holds)."""
    return [*request.users, *([caller.name] if request.me else [])]


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
    except RecursionError:
        raise InvalidArgument("overrides_json is nested too deeply to read; send a flat object of spec fields"
                              ) from None
    if not isinstance(data, dict):
        raise InvalidArgument("overrides_json must be a JSON object of spec fields")
    return data


def submit_request(request: j.SubmitJobRequest) -> SubmitRequest:
    """The spec as text or typed (then as the mapping a spec file holds, checked by the same model), with the
    overrides as JSON (deprecated) or typed: one of each pair."""
    if request.HasField("job_spec") and request.spec:
        raise InvalidArgument("spec and job_spec are both set; give the spec once, as text or typed", field="job_spec")
    if request.HasField("overrides") and request.overrides_json:
        raise InvalidArgument("overrides and overrides_json are both set; give overrides only (overrides_json is"
                              " deprecated)", field="overrides")
    sizes = {typed: getattr(request, typed).ByteSize() for typed in ("job_spec", "overrides")
             if request.HasField(typed)}
    sizes["overrides_json"] = len(request.overrides_json.encode())
    for field, size in sizes.items():  # the limit a spec's text has (load_spec), so typed is no way round it
        if size > MAX_SPEC_BYTES:
            raise InvalidArgument(f"{field} is {size:,} bytes; a job spec may be at most {MAX_SPEC_BYTES:,} bytes"
                                  " (1 MB), typed or as text: put large data in files and reference them",
                                  field=field)
    for typed in ("job_spec", "overrides"):
        message = getattr(request, typed)
        if request.HasField(typed) and message.HasField("time_limit") and message.time_limit_unlimited:
            raise InvalidArgument(f"{typed}.time_limit and {typed}.time_limit_unlimited are both set; give one of"
                                  " them", field=f"{typed}.time_limit_unlimited")
    spec = job_convert.spec_fields(request.job_spec) if request.HasField("job_spec") else request.spec
    overrides = (job_convert.spec_fields(request.overrides) if request.HasField("overrides")
                 else overrides_of(request.overrides_json))
    return SubmitRequest(spec, overrides, request.request_id or None, label(request), request.held)


class JobService(job_pb2_grpc.JobServiceServicer):
    def __init__(self, plane):
        self.plane = plane

    def _submit(self, requests, context) -> list[j.SubmitJobResponse]:
        asked = []
        for k, r in enumerate(requests):
            try:
                asked.append(submit_request(r))
            except VipuError as e:  # its field paths then say which spec: jobs[2].job_spec...
                e.spec_index = k
                raise
        done = self.plane.jobs.submit(asked, identity(self.plane, context))
        return [j.SubmitJobResponse(job_ids=[x.id for x in d.jobs], duplicate=d.duplicate) for d in done]

    @rpc
    def SubmitJob(self, request, context):
        if request.validate_only:  # sbatch --test-only: nothing is queued
            x = self.plane.jobs.test_only(submit_request(request), identity(self.plane, context))
            expected = j.ExpectedStart(start=x.start, start_time=None if x.start is None else timestamp(x.start),
                                       reason=x.reason, partition=x.partition, allocation=x.allocation, ipus=x.ipus,
                                       first_ipu=x.first_ipu)
            return j.SubmitJobResponse(job_ids=[x.job_id], expected=expected)
        return self._submit([request], context)[0]

    @rpc
    def SubmitJobs(self, request, context):
        """Several SubmitJobs in one call and one commit, or none (scheduler.submit_many)."""
        if not request.jobs:
            raise InvalidArgument("jobs is empty; give at least one spec")
        if any(r.validate_only for r in request.jobs):
            raise InvalidArgument("validate_only is for SubmitJob: test one spec at a time")
        if len(request.jobs) > MAX_SPECS_PER_CALL:
            raise InvalidArgument(f"jobs has {len(request.jobs):,} specs; give at most {MAX_SPECS_PER_CALL:,} in one"
                                  " call and the rest in further calls")
        return j.SubmitJobsResponse(jobs=self._submit(request.jobs, context))

    @rpc
    def ListJobs(self, request, context):
        caller = identity(self.plane, context)
        page = self.plane.job_views.queue(caller, users_of(request, caller), states_of(request.states),
                                          request.ids, not request.brief, request.page_size, request.page_token)
        return self._named(request, self._listed(page, request.ids and not request.brief, request.brief,
                                                 request.placement))

    @rpc
    def History(self, request, context):
        if request.limit < 0:
            raise InvalidArgument(f"limit is {request.limit}; give 0 for every row or N > 0 for the last N",
                                  field="limit")
        since = request.ended_since.ToNanoseconds() / 1e9 if request.HasField("ended_since") else None
        caller = identity(self.plane, context)
        page = self.plane.job_views.history(caller, users_of(request, caller), states_of(request.states),
                                            request.ids, request.duplicates, request.limit, request.page_size,
                                            request.page_token, since)
        return self._named(request, self._listed(page, request.ids and not request.brief, request.brief))

    def _named(self, request, reply: j.ListJobsResponse) -> j.ListJobsResponse:
        """The first page says which users the request names that the controller knows nothing of."""
        if request.users and not request.page_token:
            reply.unknown_users.extend(self.plane.job_views.unknown_users(request.users))
        return reply

    def _listed(self, page, with_records: bool, brief: bool, placement: bool = False) -> j.ListJobsResponse:
        """A full listing of named jobs (`vipu show job` of an array: every task, in one call) carries each job's
        run record as GetJob does; a listing of everyone's jobs does not read thousands of records for it."""
        reply = job_convert.jobs(self.plane.paced(page.items), brief, placement)
        reply.next_page_token, reply.total_size = page.next_page_token, page.total
        if with_records:
            for message in reply.jobs:
                self._add_record(message)
        return reply

    def _add_record(self, message: j.Job) -> None:
        record = self.plane.job_views.record(message.id)
        if record is not None:
            job_convert.add_run(message, record.summary())

    @rpc
    def GetJob(self, request, context):
        reply = job_convert.job(self.plane.job_views.job(request.id, identity(self.plane, context)))
        self._add_record(reply)
        return reply

    @rpc
    def JobLogs(self, request, context):
        after = job_convert.log_mark(request.after) if request.HasField("after") else None
        logs = self.plane.job_views.logs(request.id, identity(self.plane, context), request.follow, after,
                                         request.partial)
        reply = j.JobLogsResponse(lines=logs.lines, job=job_convert.job(logs.job, brief=request.follow))  # (whole: its kind)
        if request.follow:
            reply.mark.CopyFrom(job_convert.mark_message(logs.mark))
        elif logs.record is not None:
            reply.record_json = json.dumps(logs.record.run_data())
        return reply

    @rpc
    def CancelJobs(self, request, context):
        caller = identity(self.plane, context)
        match = job_convert.job_filter(request, states_of(request.states), caller.name)
        if request.signal:
            to = TARGETS.get(request.signal_target, "children")
            return job_convert.jobs(self.plane.jobs.signal(list(request.ids), match, request.single, request.signal,
                                                           caller, to), request.brief)
        return job_convert.jobs(self.plane.jobs.cancel(list(request.ids), match, request.single, caller),
                                request.brief)

    @rpc
    def UpdateJob(self, request, context):
        return job_convert.jobs(self.plane.jobs.update(request.id, job_convert.job_update(request), request.single,
                                                       identity(self.plane, context)))

    @rpc
    def HoldJobs(self, request, context):
        return job_convert.jobs(self.plane.jobs.hold(list(request.ids), request.admin, request.single,
                                                     identity(self.plane, context)))

    @rpc
    def ReleaseJobs(self, request, context):
        return job_convert.jobs(self.plane.jobs.release(list(request.ids), request.single,
                                                        identity(self.plane, context)))

    @rpc
    def RequeueJobs(self, request, context):
        return job_convert.jobs(self.plane.jobs.requeue(list(request.ids), request.single,
                                                        identity(self.plane, context), request.hold))

    @rpc
    def ClusterInfo(self, request, context):
        info = self.plane.job_views.info()
        return j.ClusterInfoResponse(
            pod=info.pod,
            ilds=[j.Pod64Info(ild=r.ild, idle=r.idle, allocated=r.allocated, failed=r.failed, total=r.ipus,
                              drained=r.drained, draining=r.draining, completing=r.completing) for r in info.ilds],
            pending_jobs=info.pending_jobs, running_jobs=info.running_jobs, qos=info.qos,
            completing_jobs=info.completing_jobs, completing_nodes=info.completing_nodes,
        )

    @rpc
    def Priorities(self, request, context):
        page = self.plane.job_views.priorities(identity(self.plane, context), list(request.ids), request.single,
                                               request.page_size, request.page_token)
        return j.PrioritiesResponse(
            jobs=[j.PriorityFactors(job_id=r.job_id, user=r.user, priority=r.total, age=r.age, fairshare=r.fairshare,
                                    job_size=r.job_size, qos=r.qos, nice=r.nice, array_job_id=job.array_job_id,
                                    array_task_id=job.array_task_id)
                  for r, job in page.items],
            next_page_token=page.next_page_token, total_size=page.total,
        )
