"""sbatch --test-only: when a job would start if it were queued now, worked out on a read copy of the queue
(view.py) and never on the live one: nothing is queued, no id is used up, and no lock is held while the policy runs.

How: the job is checked as a submit checks it (submission.py), filed into a copy of the pending order at its
priority, and the policy walks that queue once, as a cycle would: a job that would start now starts now; else its
estimated start is its reservation, as `vipu show job` would show it, and its block (first_ipu) the one the start or
reservation takes, for the nodes sbatch names. A held job, one waiting for a dependency, and
one behind more than `max_job_test` jobs have no start time (its reason says why); a begin time puts the start no
earlier, and its reason is BeginTime, as the queue's; so does a dependency that time alone meets (after:ID+MINUTES
on jobs already started), reason Dependency. An array is tested by its first task.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Mapping, NamedTuple

from vipu.errors import InvalidArgument
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.partition.rules import job_partition_name
from vipu.scheduler.dependency_reads import dependency_status
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import ACTIVE
from vipu.scheduler.policies import get_policy
from vipu.scheduler.policies.base import BEGIN_TIME, DEPENDENCY, HELD, NEVER, QueuedJob, ScheduleRequest
from vipu.scheduler.submission import build_jobs, check_dependency, resolve, resolve_begin

if TYPE_CHECKING:
    from vipu.scheduler.view import QueueView


class Expectation(NamedTuple):
    job_id: int  # the id the job would get if it were queued now
    ipus: int
    allocation: str
    partition: str  # slurm_<id>, the partition it would run on
    start: float | None  # None: not known (reason says why)
    reason: str  # why it would wait ("" when it would start at once)
    first_ipu: int | None = None  # the first IPU of its block at that start (None: not known)


def expected_start(view: QueueView, spec: JobSpec, now: float, available_mask: int,
                   allowed_masks: Mapping[str, int] | None) -> Expectation:
    """When `spec` (a job as submitted, its kind's admission passed) would start if queued at `now`, on the queue
    `view`; `available_mask`, `allowed_masks`: as a cycle takes them. Refuses what a submit would refuse."""
    resolved = resolve(spec, view.pod, view.config)
    if resolved.qos in view.retired_qos:
        raise InvalidArgument(f"qos {resolved.qos!r} is no longer in the scheduler config; use one of"
                              f" {', '.join(sorted(set(view.config.qos) - view.retired_qos))}")
    table = view.table
    job_id = table.next_id
    array = resolved.parsed_array(view.config.max_array_tasks)
    count = len(array.indices) if array else 1
    check_dependency(resolved, table, range(job_id, job_id + count))
    nodes = None
    if resolved.nodelist is not None or resolved.exclude is not None:
        table.nodes.check(resolved)
        nodes = table.nodes.mask(resolved)
    begin = resolve_begin(resolved, now) if resolved.begin is not None else None
    [job] = build_jobs(resolved, job_id, 1, now, None, array.indices[:1] if array else None, begin)
    allocation = resolved.allocation or DEFAULT_ALLOCATION
    expect = Expectation(job_id, resolved.ipus, allocation, job_partition_name(job_id), None, "")
    if resolved.hold:
        return expect._replace(reason=HELD)
    waits = begin is not None and begin > now  # BeginTime, as `vipu queue` would say before anything else
    status, met_at = dependency_status(_DependencyView(view, job), job, now)
    if status != "ok" and met_at is None:
        return expect._replace(reason=BEGIN_TIME if waits else DEPENDENCY if status == "wait" else NEVER)
    eligible = max(now, begin or now, met_at or now)
    queued = QueuedJob(job_id, resolved.ipus, resolved.time_limit,  # type: ignore[arg-type]
                       eligible, resolved.user, resolved.qos,  # type: ignore[arg-type]
                       resolved.nice, job.array_job_id, array.limit if array else None, resolved.allocation,
                       account=resolved.account, nodes=nodes)
    order = view.order.read_copy()  # the view's own order is shared by every reader of the snapshot
    order.add(queued, now)
    running = list(table.running.values())
    request = ScheduleRequest(
        now=now, total_ipus=view.total, available_mask=available_mask, pending=order.iterate(now, running),
        running=running, qos=view.config.qos, healthy_mask=view.full_mask & ~view.failed_mask,
        allowed_masks=allowed_masks, max_job_test=view.config.max_job_test, running_mask=table.used_mask,
        teardowns=table.teardowns(view.failed_mask))
    decision = get_policy(view.config.policy)(request)
    first = next((s.first_ipu for s in decision.starts if s.job_id == job_id), None)
    if first is not None:
        start, reason = now, ""
    else:
        info = decision.explain(queued)
        start, reason = (info.estimated_start, info.reason) if info is not None else (None, "")
        first = decision.expected_first_ipu.get(job_id) if start is not None else None
    if eligible > now:  # not eligible before its begin time, or before its dependency's delay is over
        if start is not None and start < eligible:
            first = None  # its block was worked out for the earlier start, not for when it may first start
        start, reason = None if start is None else max(start, eligible), BEGIN_TIME if waits else DEPENDENCY
    return expect._replace(start=start, reason=reason, first_ipu=first)


class _DependencyView:
    """What dependency_status reads of a scheduler, from the read copy: the jobs, the arrays, and for a singleton
    clause the active jobs of the job's name and user."""

    def __init__(self, view: QueueView, job):
        jobs = view.table.jobs
        key = (job.name, job.user)
        same = {i for i, j in jobs.items() if (j.name, j.user) == key and j.state in ACTIVE} \
            if job.spec.dependency and "singleton" in job.spec.dependency else set()
        self.table = SimpleNamespace(jobs=jobs, arrays=view.table.arrays, active_by_name={key: same})
