"""One scheduling cycle, as numbered steps: gate, order, snapshot, decide, commit, remember.

  1. gate      held jobs and unmet dependencies leave the walk with their reason (JobHeldUser, Dependency, ...)
  2. order     the pending queue in the policy's order, produced lazily (order.py)
  3. snapshot  free IPUs, running jobs with their end-by times, and hints that let the walk stop early
  4. decide    the policy, a pure function of the snapshot (policies/)
  5. commit    started and evicted jobs go to the Journal in one commit, then into memory (table.py)
  6. remember  the reasons and estimated starts, kept in memory only, for queries

Why the decision is applied here and not in the policy: a policy may be replayed, tested and swapped; only this
step touches live state, and only after the Journal has the change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from vipu.scheduler.deps import evaluate
from vipu.scheduler.effects import Effect, StartJob, StopJob
from vipu.scheduler.job import Job
from vipu.scheduler.policies.base import (
    DEPENDENCY,
    HELD,
    NEVER,
    PendingInfo,
    ScheduleDecision,
    ScheduleRequest,
    qos_sets,
)
from vipu.scheduler.states import TERMINAL, JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

S = JobState
SMALL_QUEUE = 16  # up to this many pending jobs a cycle walks them all instead of computing stop hints


def run_cycle(sched: Scheduler, now: float, available_mask: int | None, allowed_masks: Mapping[str, int] | None,
              estimates: bool) -> list[Effect]:
    table = sched.table
    sched.last_cycle_at = now
    if not table.pending:
        sched.pending_info, sched.last_decision = {}, None
        return []
    info = _gate(sched)
    running = list(table.running.values())
    order = sched.order.iterate(now, running)
    sizes = preemptors = shortest = None
    if len(table.pending) > SMALL_QUEUE:  # hints that let the walk stop early; a short queue is walked whole
        sizes, preemptors, shortest = _hints(sched, info)
    if info:
        order = (q for q in order if q.id not in info)
    if available_mask is None:
        available_mask = sched.full_mask & ~table.used_mask & ~sched.failed_mask
    request = ScheduleRequest(
        now=now, total_ipus=sched.total, available_mask=available_mask, pending=order, running=running,
        qos=sched.config.qos, healthy_mask=sched.full_mask & ~sched.failed_mask, allowed_masks=allowed_masks,
        max_job_test=sched.config.max_job_test, sizes=sizes, preemptors=preemptors, estimates=estimates,
        shortest=shortest,
    )
    decision = sched.policy(request)
    effects = _apply(sched, decision, now)
    info.update(decision.pending)
    sched.pending_info, sched.last_decision = info, decision
    return effects


def _hints(sched: Scheduler, info: dict[int, PendingInfo]) -> tuple[dict, dict, dict]:
    """Waiting jobs by size, preempting jobs by size, and the shortest time limit per size (eligible only)."""
    table = sched.table
    sizes = dict(table.pending_sizes)
    preempting = qos_sets(sched.config.qos).preempting
    preemptors: dict[int, int] = {}
    for (qos, ipus), n in table.pending_qos.items():
        if n and qos in preempting:
            preemptors[ipus] = preemptors.get(ipus, 0) + n
    for job_id in info:
        queued = table.pending[job_id]
        sizes[queued.ipus] -= 1
        if queued.qos in preempting:
            preemptors[queued.ipus] -= 1
    return sizes, preemptors, table.shortest_limits()


HELD_INFO = PendingInfo(HELD)  # shared: a queue of thousands of held jobs must not cost an object each per cycle


def _gate(sched: Scheduler) -> dict[int, PendingInfo]:
    """Reasons for pending jobs that may not be considered at all this cycle."""
    table = sched.table
    jobs = table.jobs
    info: dict[int, PendingInfo] = {}
    for job_id in list(table.gated):  # a copy: dependency_met() shrinks the set
        job = jobs[job_id]
        if job.held:
            info[job_id] = HELD_INFO
            continue
        status = dependency_status(sched, job)
        if status == "ok":
            table.dependency_met(job_id)
        else:
            info[job_id] = PendingInfo(DEPENDENCY if status == "wait" else NEVER)
    return info


def dependency_status(sched: Scheduler, job: Job) -> str:
    """'ok', 'wait' or 'never' for the job's dependency (Slurm's Dependency / DependencyNeverSatisfied)."""
    dep = job.spec.parsed_dependency()
    if dep is None:
        return "ok"
    jobs = sched.table.jobs

    def targets(i: int):
        for t in sched.table.arrays.get(i) or [i]:
            target = jobs.get(t)
            if target is None:
                yield ("CANCELLED", False, True)  # forgotten: treated as ended without success
            else:
                started = any(h.state is S.RUNNING for h in target.history)
                yield (target.state.value, started, target.state in TERMINAL)

    def singleton_clear() -> bool:
        active = sched.table.active_by_name.get((job.name, job.user), ())
        return not any(i < job.id for i in active)

    return evaluate(dep, targets, singleton_clear)


def _apply(sched: Scheduler, decision: ScheduleDecision, now: float) -> list[Effect]:
    jobs = sched.table.jobs
    changed: list[Job] = []
    stops: list[Effect] = []
    starts: list[Effect] = []
    victims = [jobs[p.job_id] for p in decision.preemptions]
    for p, job in zip(decision.preemptions, victims):
        ended = job.moved(S.PREEMPTED, now, end_time=now)
        requeue = p.mode == "requeue" and job.spec.requeue
        changed.append(ended.requeued(now) if requeue else ended)
        stops.append(StopJob(job.id, job.partition, S.PREEMPTED, requeue))
    for s in decision.starts:
        job = jobs[s.job_id]
        started = job.moved(S.RUNNING, now, start_time=now, first_ipu=s.first_ipu, end_time=None, exit_code=None,
                            reason=None, estimated_start=None)
        changed.append(started)
        starts.append(StartJob(job.id, job.partition, job.ipus, s.first_ipu, s.place_mask, now,
                               now + job.time_limit, job.spec.workload, job.spec.allocation))
    sched._commit(changed, now)
    for job in victims:
        sched._charge(job, now)  # the runs that were cut short count towards their users' fair-share
    return stops + starts
