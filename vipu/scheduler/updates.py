"""scontrol update job: what a change to a queued or running job makes of its records. Pure: the new records, for
Scheduler.update to commit (the table then refiles each job: its QOS, nice and priority in the order, its begin time
and dependency in the gate, its running time limit in the reservations).

Who may change what, as in Slurm: a pending job takes every field; a running job its name, its nice (recorded: it
no longer orders anything) and its time limit, which its owner may lower and only an admin may raise (a limit
lowered below the time it has run ends it at once, TIMEOUT).
Priority is an admin's: a fixed priority in place of the multifactor one, and 0 holds the job (JobHeldAdmin), as
scontrol's Priority=0 does; a fixed priority on a held job releases it. An array job's id stands for its tasks that
have not ended: the time limit changes on each, every other field on its pending tasks.

Why a new dependency may name only jobs queued before the job: dependencies then only ever point to older jobs, so
an update can never close a cycle (submit keeps the same rule by construction).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from pydantic_core import PydanticCustomError

from vipu.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from vipu.partition.node_names import expand
from vipu.partition.rules import check_job_title
from vipu.scheduler.begin import HELP as BEGIN_HELP, parse_begin
from vipu.scheduler.deps import DependencySyntaxError, parse_dependency
from vipu.scheduler.durations import MAX_SECONDS, format_duration
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.node_requests import UPDATE_FIELDS
from vipu.scheduler.submission import check_dependency, resolve, resolve_begin

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

S = JobState
MAX_NICE = 10_000  # as the spec's nice
MAX_PRIORITY = 2**32 - 2  # Slurm's largest priority (0xfffffffe)
MAX_HOSTS = 4096  # as the spec's nodelist and exclude


class JobUpdate(NamedTuple):
    """The fields to change (None: left as they are), by Slurm's names in `FIELDS`."""

    time_limit: float | None = None  # seconds; math.inf: UNLIMITED, the longest the job's QOS allows
    time_limit_add: float | None = None  # seconds added (negative: taken off): TimeLimit=+N / -N
    qos: str | None = None
    nice: int | None = None
    dependency: str | None = None  # "": none
    name: str | None = None
    array_task_throttle: int | None = None  # 0: no limit
    begin: str | None = None  # as sbatch --begin takes it
    priority: int | None = None  # admin only; 0 holds
    nodelist: str | None = None  # as sbatch -w; "": none
    exclude: str | None = None  # as sbatch -x; "": none

    def given(self) -> list[str]:
        """The fields set, by Slurm's names."""
        return [FIELDS[f] for f, v in zip(self._fields, self) if v is not None]


FIELDS = {"time_limit": "TimeLimit", "time_limit_add": "TimeLimit", "qos": "QOS", "nice": "Nice",
          "dependency": "Dependency", "name": "Name", "array_task_throttle": "ArrayTaskThrottle",
          "begin": "StartTime", "priority": "Priority", "nodelist": "ReqNodeList", "exclude": "ExcNodeList"}
WHILE_RUNNING = {"TimeLimit", "Name", "Nice"}  # what a running job may still change (job_mgr.c's _update_job)


def changed(s: Scheduler, job_id: int, single: bool, update: JobUpdate, now: float, admin: bool) -> list[Job]:
    """The new records of the jobs an update of `job_id` changes (an array job's id: its tasks not ended, unless
    `single`); `admin`: the caller is one. Refuses, naming the field and the fix, before anything changes."""
    fields = update.given()
    if not fields:
        raise InvalidArgument("no field to update; give Field=value pairs such as TimeLimit=30 or QOS=high")
    if update.time_limit is not None and update.time_limit_add is not None:
        raise InvalidArgument("TimeLimit is given twice (a value and a change); give one", field="time_limit")
    if update.priority is not None and not admin:
        raise PermissionDenied("Priority: only an admin may set a job's priority; Nice=N (0 or more) lowers your"
                               " own job's")
    if update.nice is not None and update.nice < 0 and not admin:
        raise PermissionDenied(f"Nice is {update.nice}: only an admin may give a negative nice (it raises the job's"
                               " priority over everyone's); give 0 or more")
    _check_values(s, update)  # a bad value first, whatever the job's state (scontrol reports it so too)
    whole = s.table.whole_array(job_id, single)
    jobs = [j for j in s.table.expand([job_id], single) if j.state not in TERMINAL]
    if not jobs:
        job = s.table.get(job_id)
        what = f"array job {job_id}: every task" if whole else f"job {job.display_id}"
        raise FailedPrecondition(f"{what} already ended ({job.state.value}); only pending and running jobs can be"
                                 " updated")
    pending_only = [f for f in fields if f not in WHILE_RUNNING]
    if pending_only:
        running = [j for j in jobs if j.state is not S.PENDING]
        if not whole and running:
            raise FailedPrecondition(f"job {running[0].display_id} is {running[0].state.value}: {pending_only[0]} can"
                                     " change only while it is pending (a running job's TimeLimit, Name and Nice can)")
        if whole and len(running) == len(jobs):
            raise FailedPrecondition(f"array job {job_id} has no pending task: {pending_only[0]} can change only"
                                     " while a task is pending (a running task's TimeLimit, Name and Nice can)")
    out = []
    for job in jobs:
        if job.state is S.PENDING:
            new = _pending(s, job, update, now)
        else:
            new = _running(s, job, update, admin)
        if new is not job:
            out.append(new)
    return out


def _limit(job: Job, update: JobUpdate) -> float | None:
    """The job's new time limit, if the update gives one."""
    if update.time_limit is not None:
        limit = update.time_limit
    elif update.time_limit_add is not None:
        if job.time_limit >= MAX_SECONDS:  # scontrol refuses it too (update_job.c), as UNLIMITED has no length
            raise InvalidArgument(f"TimeLimit: job {job.display_id} is UNLIMITED, which +N/-N cannot change; give"
                                  " a new limit instead, e.g. TimeLimit=60", field="time_limit")
        limit = job.time_limit + update.time_limit_add
    else:
        return None
    if math.isinf(limit) and limit > 0:
        return limit  # UNLIMITED: resolve() makes it the QOS's longest, as a submit's
    if limit <= 0:
        raise InvalidArgument(f"TimeLimit: job {job.display_id} has {format_duration(job.time_limit)}, and the change"
                              " leaves it no time; give a positive limit (to end it, vipu cancel)", field="time_limit")
    if limit > MAX_SECONDS:
        raise InvalidArgument(f"TimeLimit: {format_duration(limit)} is longer than a year; give at most 366 days",
                              field="time_limit")
    return limit


def _running(s: Scheduler, job: Job, update: JobUpdate, admin: bool) -> Job:
    """A running job's new record: its time limit (raising it is an admin's), its name and its nice (kept, as
    Slurm keeps it: it no longer orders anything) may change."""
    spec_changes: dict = {}
    changes: dict = {}
    limit = _limit(job, update)
    if limit is not None and math.isinf(limit):  # UNLIMITED: the longest its QOS allows
        limit = resolve(job.spec.model_copy(update={"time_limit": limit}), s.pod, s.config).time_limit
    if limit is not None and limit != job.time_limit:
        if limit > job.time_limit and not admin:
            raise PermissionDenied(f"TimeLimit: job {job.display_id} is RUNNING with"
                                   f" {format_duration(job.time_limit)}; only an admin may raise a running job's time"
                                   " limit (its owner may lower it)")
        spec_changes["time_limit"] = limit
    if update.nice is not None:
        spec_changes["nice"] = update.nice
    if update.name is not None:
        spec_changes["name"] = changes["name"] = update.name
    if spec_changes:
        spec = resolve(job.spec.model_copy(update=spec_changes), s.pod, s.config)  # within its QOS's limit
        if spec != job.spec:
            changes["spec"] = spec
    if all(getattr(job, k) == v for k, v in changes.items()):
        return job
    return _with(job, changes)


def _pending(s: Scheduler, job: Job, update: JobUpdate, now: float) -> Job:
    """A pending job's new record (the same object when nothing changes)."""
    spec_changes: dict = {}
    changes: dict = {}
    limit = _limit(job, update)
    if limit is not None:
        spec_changes["time_limit"] = limit
    if update.qos is not None:
        spec_changes["qos"] = update.qos
    if update.nice is not None:
        spec_changes["nice"] = update.nice
    if update.dependency is not None:
        spec_changes["dependency"] = _dependency(s, job, update.dependency)
    if update.name is not None:
        spec_changes["name"] = changes["name"] = update.name
    if update.array_task_throttle is not None:
        spec_changes["array"] = _throttled(job, update.array_task_throttle)
    if update.begin is not None:
        begin = _begin(job, update.begin, now)
        spec_changes["begin"] = changes["begin_time"] = begin
    spec_changes.update(node_changes(update))
    if update.priority is not None:
        if update.priority == 0:  # scontrol's Priority=0: held, and only an admin releases it
            changes.update(held=True, admin_hold=True, fixed_priority=None)
        else:  # a fixed priority; the job is no longer held, as in Slurm (a held job's priority is 0)
            changes.update(fixed_priority=update.priority, held=False, admin_hold=False)
    if spec_changes:
        spec = resolve(job.spec.model_copy(update=spec_changes), s.pod, s.config)
        if s.table.nodes is not None and node_changes(update):  # names, a list one block holds: as submit's
            s.table.nodes.check(spec, UPDATE_FIELDS)
        if spec != job.spec:
            changes["spec"] = spec
    if all(getattr(job, k) == v for k, v in changes.items()):
        return job
    new = _with(job, changes)  # eligible from now if the update lifted what held it back, or from its new begin
    return new.with_eligibility(job.id in s.table.deps_met and new.spec.dependency == job.spec.dependency, now)


def node_changes(update: JobUpdate) -> dict:
    """ReqNodeList= and ExcNodeList= as the spec's nodelist and exclude ("" removes one, as scontrol's); refuses a
    value that is no Slurm host list."""
    out = {}
    for field in ("nodelist", "exclude"):
        value = getattr(update, field)
        if value is not None:
            out[field] = _hosts(field, value.strip()) if value.strip() else None
    return out


def _check_values(s: Scheduler, update: JobUpdate) -> None:
    """Refuse a value that is wrong whatever the job (the checks that need the job come with its change)."""
    if update.qos is not None:
        if not update.qos:
            raise InvalidArgument(f"QOS is empty; give one of {', '.join(sorted(s.config.qos))}", field="qos")
        if update.qos in s.retired_qos or update.qos not in s.config.qos:
            live = sorted(set(s.config.qos) - s.retired_qos)
            raise InvalidArgument(f"QOS {update.qos!r} is unknown; use one of {', '.join(live)}", field="qos")
    if update.nice is not None and not -MAX_NICE <= update.nice <= MAX_NICE:
        raise InvalidArgument(f"Nice is {update.nice}; give -{MAX_NICE} to {MAX_NICE}", field="nice")
    if update.priority is not None and not 0 <= update.priority <= MAX_PRIORITY:
        raise InvalidArgument(f"Priority is {update.priority}; give 1 to {MAX_PRIORITY}, or 0 to hold the job",
                              field="priority")
    if update.name is not None:
        check_job_title(update.name, "Name")
    if update.array_task_throttle is not None and update.array_task_throttle < 0:
        raise InvalidArgument(f"ArrayTaskThrottle is {update.array_task_throttle}; give N > 0 tasks at once, or 0"
                              " for no limit", field="array_task_throttle")
    if update.dependency is not None and update.dependency.strip():
        _parsed_dependency(update.dependency.strip())
    if update.begin is not None:
        _parsed_begin(update.begin)
    node_changes(update)


def _with(job: Job, changes: dict) -> Job:
    """The job with `changes`, keeping the spec it was submitted with (a retry of that submit, by its request id,
    must still be known as one)."""
    if "spec" in changes and job.request_id is not None and job.submitted_spec is None:
        changes["submitted_spec"] = job.spec
    return job.model_copy(update=changes)


def _dependency(s: Scheduler, job: Job, text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    dep = _parsed_dependency(text)
    first = job.array_job_id if job.array_job_id is not None else job.id
    later = sorted(i for i in {*dep.ids, *(array for array, _ in dep.tasks)} if i >= first)
    if later:
        which = "itself" if later[0] in (first, job.id) else f"job {later[0]}, queued after it"
        raise InvalidArgument(f"Dependency names {which}: job {job.display_id} may depend only on jobs queued before"
                              " it, which keeps dependencies free of cycles", field="dependency")
    check_dependency(job.spec.model_copy(update={"dependency": text}), s.table, range(0))
    return text


def _throttled(job: Job, limit: int) -> str:
    """The job's array with `limit` tasks at once (0: no limit)."""
    if job.array_job_id is None or job.spec.array is None:
        raise InvalidArgument(f"ArrayTaskThrottle: job {job.display_id} is not an array job; only an array's tasks"
                              " have a limit", field="array_task_throttle")
    body = job.spec.array.partition("%")[0]
    return f"{body}%{limit}" if limit else body


def _begin(job: Job, text: str, now: float) -> float:
    """StartTime=: the job's new begin time, absolute."""
    begin = resolve_begin(job.spec.model_copy(update={"begin": _parsed_begin(text)}), now)
    if begin is None:  # parse_begin gives None only for None
        raise InvalidArgument(f"StartTime is empty; {BEGIN_HELP}", field="begin")
    return max(begin, now)  # a time past: eligible at once


def _parsed_dependency(text: str):
    try:
        return parse_dependency(text)
    except DependencySyntaxError as e:
        raise InvalidArgument(f"Dependency {e}", field="dependency") from None


def _hosts(field: str, text: str) -> str:
    if len(text) > MAX_HOSTS:
        raise InvalidArgument(f"{UPDATE_FIELDS[field]} is {len(text)} characters; give at most {MAX_HOSTS}",
                              field=field)
    try:
        expand(text)
    except ValueError as e:
        raise InvalidArgument(f"{UPDATE_FIELDS[field]} {e}", field=field) from None
    return text


def _parsed_begin(text: str):
    try:
        return parse_begin(text)
    except PydanticCustomError as e:
        raise InvalidArgument(f"StartTime {e.message()}", field="begin") from None
