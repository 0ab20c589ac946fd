"""Scheduler records to protobuf messages for the JobService, and its requests' filters and updates to the
scheduler's terms. A job's times, spec, detail and run are written twice for one release: as the typed fields and as
the deprecated doubles and JSON texts (docs/api.md, Compatibility)."""

from __future__ import annotations

import json
import math

from pydantic_core import to_json

from vipu.client.messages import duration, seconds, timestamp, to_data, to_message
from vipu.control.job_logs import LogMark
from vipu.errors import InvalidArgument
from vipu.scheduler.job_filter import JobFilter
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import SHORT, JobState
from vipu.scheduler.updates import JobUpdate
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_run_pb2 as r
from vipu.v1 import job_spec_pb2 as s


SPECS_KEPT = 1024  # distinct specs whose messages are kept; past that the cache starts again
_specs: dict[str, s.JobSpec] = {}  # a spec's JSON: its message


def _spec_parts(spec) -> tuple[s.JobSpec, str]:
    """A spec's message and JSON; the message worked out once per distinct spec. Why: converting every job's spec
    was a third of a full listing's CPU (1.0 s for 10,000 jobs, 0.7 s without), though an array's tasks, and
    every submission of one script, hold the same spec; its JSON is cheap (pydantic's Rust encoder) and names it."""
    text = spec.model_dump_json()
    message = _specs.get(text)
    if message is None:
        if len(_specs) >= SPECS_KEPT:
            _specs.clear()
        message = _specs[text] = to_message(spec.model_dump(), s.JobSpec())
    return message, text


def _stamp(value: float | None):
    return None if value is None else timestamp(value)


def job(x: Job, brief: bool = False, placement: bool = False) -> j.Job:
    """brief: without spec_json and detail_json (a listing's table needs neither; they are most of its cost);
    `placement` with brief: only the spec's allocation and nice and the detail's first IPU of them."""
    message = j.Job(
        id=x.id,
        name=x.name,
        user=x.user,
        account=x.account or "",
        qos=x.spec.qos or "",
        state=x.state.value,
        state_code=SHORT[x.state],
        reason=x.reason or "",
        ipus=x.ipus,
        partition=x.partition if x.first_ipu is not None else "",
        time_limit_s=x.time_limit,
        submit_time=x.submit_time,
        start_time=x.start_time,
        end_time=x.end_time,
        estimated_start=x.estimated_start,
        exit_code=x.exit_code,
        signal=x.signal,
        array_job_id=x.array_job_id,
        array_task_id=x.array_task_id,
        dependency=_dependency(x),
        requeue_count=x.requeue_count,
        held=x.held,
        admin_hold=x.admin_hold,
        begin_time=x.begin_time,
        priority=x.priority.total if x.priority and not x.held else 0.0,  # held: 0, as Slurm shows it
        modelled=x.spec.workload.modelled,
        time_limit=duration(x.time_limit) if math.isfinite(x.time_limit) else None,
        submitted=timestamp(x.submit_time),
        started=_stamp(x.start_time),
        ended=_stamp(x.end_time),
        expected_start=_stamp(x.estimated_start),
        begin=_stamp(x.begin_time),
        eligible=_stamp(x.eligible),
        cancelled_by_uid=x.cancelled_by_uid,
        uid=x.uid,
    )
    if brief and x.array_job_id is not None and "%" in (x.spec.array or ""):
        message.spec.array = x.spec.array  # its %N, which squeue shows: 26_[3-99%10]
    if brief and placement:
        if x.spec.allocation is not None:
            message.spec.allocation = x.spec.allocation
        if x.spec.nice is not None:
            message.spec.nice = x.spec.nice
        if x.first_ipu is not None:
            message.detail.first_ipu = x.first_ipu
    if not brief:
        spec, spec_json = _spec_parts(x.spec)
        message.spec.CopyFrom(spec)
        message.detail.CopyFrom(detail(x))
        message.spec_json = spec_json
        message.detail_json = to_json({  # pydantic's Rust encoder: a third of json.dumps's time, 10,000 times a listing
            "first_ipu": x.first_ipu,
            "history": [{"state": t.state.value, "at": t.at} for t in x.history],
            "priority": x.priority,
            "request_id": x.request_id,
            "recovery": x.recovery,
            "preemption": x.preemption,
            "ended_by": x.ended_by,
        }).decode()
    return message


def _dependency(x: Job) -> str:
    """What the dependency still waits for, as squeue %E shows it (a job read through the scheduler has it worked
    out); a record not read so: as written while pending, none once it left the queue."""
    if x.unmet_dependency is not None:
        return x.unmet_dependency
    return (x.spec.dependency or "") if x.state is JobState.PENDING else ""


def detail(x: Job) -> r.JobDetail:
    p = x.priority
    return r.JobDetail(
        first_ipu=x.first_ipu,
        history=[r.JobStateChange(state=t.state.value, at=timestamp(t.at)) for t in x.history],
        priority=None if p is None else r.JobPriority(job_id=p.job_id, user=p.user, total=p.total, age=p.age,
                                                      fairshare=p.fairshare, job_size=p.job_size, qos=p.qos,
                                                      nice=p.nice),
        request_id=x.request_id, recovery=x.recovery, preemption=x.preemption, ended_by=x.ended_by,
    )


def add_run(message: j.Job, summary: dict) -> None:
    """A job's latest run (a record's summary()), typed and as result_json."""
    message.result_json = json.dumps(summary)
    to_message(summary, message.result)


def spec_fields(message: s.JobSpec) -> dict:
    """A typed spec (or overrides) as the mapping a spec file holds: the spec model checks it as it checks a file."""
    return to_data(message)


def jobs(xs, brief: bool = False, placement: bool = False) -> j.ListJobsResponse:
    return j.ListJobsResponse(jobs=[job(x, brief, placement) for x in xs])


def job_filter(request: j.CancelJobsRequest, states: set[JobState] | None, caller: str) -> JobFilter:
    """scancel's filters; `states`: the request's states as the service reads them; `caller`: who --me is."""
    users = frozenset(request.users) | ({caller} if request.me else set())
    return JobFilter(users=users, names=frozenset(request.names), states=frozenset(states or ()),
                     allocations=frozenset(request.partitions), qos=frozenset(request.qos),
                     accounts=frozenset(request.accounts))


UPDATED = {"time_limit_s": "time_limit", "time_limit_add_s": "time_limit_add", "qos": "qos", "nice": "nice",
           "dependency": "dependency", "name": "name", "array_task_throttle": "array_task_throttle", "begin": "begin",
           "priority": "priority", "nodelist": "nodelist", "exclude": "exclude"}  # UpdateJobRequest's -> JobUpdate's


TYPED = {"time_limit": "time_limit_s", "time_limit_add": "time_limit_add_s"}  # Durations -> deprecated doubles


def job_update(request: j.UpdateJobRequest) -> JobUpdate:
    """The fields an UpdateJob sets (an unset one: None); UNLIMITED as an infinite limit, for the scheduler to make
    the longest the job's QOS allows, as a submit's."""
    values = {field: getattr(request, name) if request.HasField(name) else None for name, field in UPDATED.items()}
    for typed, old in TYPED.items():
        if request.HasField(typed):
            if request.HasField(old):
                raise InvalidArgument(f"{typed} and {old} are both set; give {typed} only ({old} is deprecated)",
                                      field=typed)
            values[UPDATED[old]] = seconds(getattr(request, typed))
    if request.time_limit_unlimited:
        given = [name for name in ("time_limit", "time_limit_s", "time_limit_add", "time_limit_add_s")
                 if request.HasField(name)]
        if given:
            raise InvalidArgument(f"time_limit_unlimited and {given[0]} are both set; give one of them",
                                  field="time_limit_unlimited")
        values["time_limit"] = math.inf
    if request.HasField("begin_time"):
        if request.HasField("begin"):
            raise InvalidArgument("begin and begin_time are both set; give one of them", field="begin_time")
        values["begin"] = repr(seconds(request.begin_time))  # Unix seconds, as begin's text may give them
    return JobUpdate(**values)


def log_mark(message: j.LogMark) -> LogMark:
    """A follower's mark, as an earlier JobLogs reply gave it; one no reply could give is refused, naming its field."""
    for name in ("run", "offset", "steps"):
        if getattr(message, name) < 0:
            raise InvalidArgument(f"after.{name} is {getattr(message, name)}; send back the mark the last reply gave"
                                  " (or none, to start)", field=f"after.{name}")
    return LogMark(message.run, message.offset, message.steps, message.opened, message.closed, message.mid_line)


def mark_message(mark: LogMark) -> j.LogMark:
    return j.LogMark(run=mark.run, offset=mark.offset or 0, steps=mark.steps, opened=mark.opened, closed=mark.closed,
                     mid_line=mark.mid_line)
