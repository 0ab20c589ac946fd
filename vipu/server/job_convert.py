"""Scheduler records to protobuf messages for the JobService, and its requests' filters and updates to the
scheduler's terms."""

from __future__ import annotations

from pydantic_core import to_json

from vipu.scheduler.job_filter import JobFilter
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import SHORT, JobState
from vipu.scheduler.updates import JobUpdate
from vipu.v1 import job_pb2 as j


def job(x: Job, brief: bool = False) -> j.Job:
    """brief: without spec_json and detail_json (a listing's table needs neither; they are most of its cost)."""
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
        dependency=x.spec.dependency or "",
        requeue_count=x.requeue_count,
        held=x.held,
        admin_hold=x.admin_hold,
        begin_time=x.begin_time,
        priority=x.priority.total if x.priority else 0.0,
        modelled=x.spec.workload.modelled,
    )
    if not brief:
        message.spec_json = x.spec.model_dump_json()
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


def jobs(xs, brief: bool = False) -> j.ListJobsResponse:
    return j.ListJobsResponse(jobs=[job(x, brief) for x in xs])


def job_filter(request: j.CancelJobsRequest, states: set[JobState] | None, caller: str) -> JobFilter:
    """scancel's filters; `states`: the request's states as the service reads them; `caller`: who --me is."""
    users = frozenset(request.users) | ({caller} if request.me else set())
    return JobFilter(users=users, names=frozenset(request.names), states=frozenset(states or ()),
                     allocations=frozenset(request.partitions), qos=frozenset(request.qos),
                     accounts=frozenset(request.accounts))


UPDATED = {"time_limit_s": "time_limit", "time_limit_add_s": "time_limit_add", "qos": "qos", "nice": "nice",
           "dependency": "dependency", "name": "name", "array_task_throttle": "array_task_throttle", "begin": "begin",
           "priority": "priority"}  # UpdateJobRequest's fields -> JobUpdate's


def job_update(request: j.UpdateJobRequest) -> JobUpdate:
    """The fields an UpdateJob sets (an unset one: None)."""
    return JobUpdate(**{field: getattr(request, name) if request.HasField(name) else None
                        for name, field in UPDATED.items()})
