"""One scheduling cycle, as numbered steps: gate, order, snapshot, decide, commit, remember.

  1. gate      jobs whose begin time has come join the walk (a heap: only they are touched), dependencies that
               may have changed are evaluated; held jobs, future begin times and unmet dependencies stay out of
               the walk (the table keeps them apart, so a cycle never touches them) with their reason
  2. order     the pending queue in the policy's order, produced lazily (order.py)
  3. snapshot  free IPUs, running jobs with their end-by times, and hints that let the walk stop early
  4. decide    the policy, a pure function of the snapshot (policies/)
  5. commit    started and evicted jobs go to the Journal in one commit, then into memory (table.py)
  6. remember  the reasons and estimated starts, kept in memory only, for queries

Why the decision is applied here and not in the policy: a policy may be replayed, tested and swapped; only this
step touches live state, and only after the Journal has the change.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Callable, Mapping

from vipu.scheduler.bits import block, has_block
from vipu.scheduler.claims import start_claimed
from vipu.scheduler.dependency_reads import dependency_status
from vipu.scheduler.effects import Effect, StartJob
from vipu.scheduler.endings import end_runs
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.multifactor import PriorityRows, qos_factors
from vipu.scheduler.policies.base import (
    DEPENDENCY,
    NEVER,
    RESOURCES,
    PendingInfo,
    QueuedJob,
    ScheduleDecision,
    ScheduleRequest,
    new_record,
)
from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler
    from vipu.scheduler.table import JobTable

S = JobState
SMALL_QUEUE = 16  # up to this many pending jobs a cycle walks them all instead of computing stop hints


def run_cycle(sched: Scheduler, now: float, available_mask: int | None, allowed_masks: Mapping[str, int] | None,
              estimates: bool) -> list[Effect]:
    table = sched.table
    sched.last_cycle_at = now
    if sched.offered:
        sched.offered = {}
    healthy = sched.full_mask & ~sched.failed_mask
    if available_mask is None:  # the Pod less running jobs, teardowns and failed IPUs (free_mask, claimed IPUs in)
        available_mask = healthy & ~(table.used_mask | table.cleaning_mask)
    claimed: list[Effect] = []
    if table.claims:  # preemptors whose victims are torn down start first, on the IPUs they were given
        claimed = _start_claimed(sched, now, available_mask & healthy)
        available_mask &= ~table.claimed_mask
        for start in claimed:
            available_mask &= ~block(start.first_ipu, start.ipus)
    if table.begins and table.begins[0][0] <= now:
        for queued in table.begun(now):
            sched.order.add(queued, now)  # re-filed among the jobs the walk sees
    if table.dependency_times and table.dependency_times[0][0] <= now:
        table.dependency_times_due(now)  # after:ID+MINUTES waits whose time has come
    if table.recheck:
        gate(sched, now)
    sched.last_cycle_seq = table.seq
    ready = len(table.ready_seq)
    if not ready:  # nothing pending, or only held, not yet begun and dependency-blocked jobs
        sched.pending_info, sched.last_decision = {}, None
        return claimed
    preempting = [q for q in sched.preempting_qos if table.ready_by_qos.get(q)]  # QOS with jobs that may evict
    if not estimates and not preempting and not _fits_by_size(table.ready_sizes, available_mask & healthy, sched.total):
        # Without estimates there is nothing to compute but starts, and none is possible: no walk at all (the jobs
        # are explained as waiting for resources).
        sched.pending_info, sched.last_decision = {}, ScheduleDecision(rest=WAITING_FOR_IPUS)
        return claimed
    running = list(table.running.values())
    sizes = preemptors = shortest = None
    if ready > SMALL_QUEUE:  # hints that let the walk stop early; a short queue is walked whole
        sizes, preemptors, shortest = _hints(table, preempting)
    config = sched.config
    request = ScheduleRequest(
        now=now, total_ipus=sched.total, available_mask=available_mask, pending=sched.order.iterate(now, running),
        running=running, qos=config.qos, healthy_mask=healthy, allowed_masks=allowed_masks,
        max_job_test=config.max_job_test, sizes=sizes, preemptors=preemptors, shortest=shortest, estimates=estimates,
        running_mask=table.used_mask, releases=table.release_groups(sched.total),
        teardowns=table.teardowns(sched.failed_mask),
    )
    decision = sched.policy(request)
    effects = _apply(sched, decision, now) if decision.starts or decision.preemptions else []
    sched.pending_info, sched.last_decision = decision.pending, decision
    return claimed + effects if claimed else effects


WAITING_FOR_IPUS = PendingInfo(RESOURCES)


def _fits_by_size(ready_sizes: Mapping[int, int], free: int, total: int) -> bool:
    """Whether the free IPUs hold a block of the size of some job that may run (else none can start without
    evicting)."""
    return any(n > 0 and has_block(free, size, total) for size, n in ready_sizes.items())


def _hints(table: JobTable, preempting: list[str]) -> tuple[dict, dict, dict]:
    """Jobs that may run by size, those of them in a QOS that may preempt (`preempting`: those with such jobs) by
    size, and the shortest time limit per size (a lower bound: over every pending job)."""
    preemptors: dict[int, int] = {}
    if preempting:
        for (qos, ipus), n in table.ready_qos.items():
            if n and qos in preempting:
                preemptors[ipus] = preemptors.get(ipus, 0) + n
    return dict(table.ready_sizes), preemptors, table.shortest_limits()


WAITING = PendingInfo(DEPENDENCY)  # shared: thousands of jobs may wait for the same reason
NEVER_INFO = PendingInfo(NEVER)


def gate(sched: Scheduler, now: float) -> int:
    """Evaluate the dependencies that may have changed since the last cycle; jobs whose dependency is met join the
    walk, the others keep their reason (Dependency, DependencyNeverSatisfied) in table.gate_info, with when a wait
    that time alone ends is over (after:ID+MINUTES), which is also when the table has it evaluated again. Held jobs
    are skipped: releasing one puts it back in table.recheck. Returns how many jobs joined the walk."""
    table = sched.table
    jobs = table.jobs
    recheck, table.recheck = table.recheck, set()
    joined = 0
    met: list[Job] = []
    for job_id in recheck:
        job = jobs[job_id]
        if job.held:
            continue
        status, at = dependency_status(sched, job, now)
        if status == "ok":
            if table.dependency_met(job_id):
                sched.order.add(table.pending[job_id], now)
                joined += 1
            if (record := job.with_eligibility(True, now)) is not job:
                met.append(record)
        elif at is not None:
            table.gate_info[job_id] = PendingInfo(DEPENDENCY, at)  # as a begin time: no start before it
            table.dependency_wait(job_id, at)
        else:
            table.gate_info[job_id] = WAITING if status == "wait" else NEVER_INFO
    if met:  # when each became eligible (sacct's Eligible), kept across a restart
        sched._commit(met, now)
    return joined


def _apply(sched: Scheduler, decision: ScheduleDecision, now: float) -> list[Effect]:
    jobs = sched.table.jobs
    changed: list[Job] = []
    starts: list[Effect] = []
    victims = [jobs[p.job_id] for p in decision.preemptions]
    for p, job in zip(decision.preemptions, victims):
        requeue = p.mode == "requeue" and job.spec.requeue
        if requeue:
            outcome = "requeued"
        elif p.mode == "requeue":
            outcome = "cancelled: its spec says requeue: false"
        else:
            outcome = f"cancelled: qos {job.spec.qos} has preempt_mode cancel"
        by = jobs[p.by_job_id]
        note = f"preempted by job {by.display_id} (qos {by.spec.qos}); {outcome}"
        ended = job.moved(S.PREEMPTED, now, end_time=now, preemption=note)
        changed.append(ended.requeued(now) if requeue else ended)
    pending = sched.table.pending
    if decision.starts:
        # the priority it started with stays the job's, as Slurm's job_ptr->priority (squeue %Q of a running job),
        # with the fair-share of the last priority calculation: working it out again for thousands of running
        # jobs at each start cost a large Pod's cycle half its time again (at most once a priority_calc_period)
        priority = _priority_rows(sched, now)
    for s in decision.starts:
        job = jobs[s.job_id]
        spec = job.spec
        changed.append(job.started(now, s.first_ipu, priority(pending[job.id])))
        starts.append(new_record(StartJob, (job.id, job.partition, spec.ipus, s.first_ipu, s.place_mask, now,
                                            now + spec.time_limit, spec.workload, spec.allocation, ())))
    if victims:
        starts = _after(sched, starts, victims)
    # the runs cut short count towards their users' fair share; stops come first, freeing the IPUs the starts use
    stops = end_runs(sched, changed, victims, now, S.PREEMPTED)
    return stops + starts if stops else starts


def _after(sched: Scheduler, starts: list[Effect], victims: list[Job]) -> list[Effect]:
    """The starts, each naming the victims whose IPUs it takes (claims.py); the records of those jobs before
    their start are kept, for a start the driver must postpone."""
    # The victims' blocks (their records before the eviction) by first IPU, and the ends they reach: running jobs
    # hold disjoint blocks, so both rise together and a bisect finds those a start overlaps. Why not an AND of
    # masks per start and victim: on 65,536 IPUs a cycle started 300 jobs after 200 evictions, 60,000 ANDs of 8 KB.
    ordered = sorted((v.first_ipu, k, v.id, v.first_ipu + v.ipus) for k, v in enumerate(victims))
    ends = [end for *_, end in ordered]
    out: list[Effect] = []
    for start in starts:
        first, last = start.first_ipu, start.first_ipu + start.ipus
        i, hit = bisect_right(ends, first), []
        while i < len(ordered) and ordered[i][0] < last:
            hit.append(ordered[i][1:3])
            i += 1
        after = tuple(v for _, v in sorted(hit))  # in the order of the evictions, as before
        if after:
            sched.offered[start.job_id] = sched.table.jobs[start.job_id]
            start = start._replace(after=after)
        out.append(start)
    return out


def _priority_rows(sched: Scheduler, now: float) -> Callable[[QueuedJob], PriorityBreakdown]:
    """The priority row of a job that starts now (breakdown(), as of the last priority calculation)."""
    factors = sched.order.fairshare_factors(now, sched.table.running.values())
    return PriorityRows(now, sched.config, sched.total, factors, qos_factors(sched.config)).row


def _start_claimed(sched: Scheduler, now: float, available: int) -> list[Effect]:
    """Start the claims whose victims are torn down (claims.start_claimed), committed in one go."""
    ready = start_claimed(sched, now, available)
    if not ready:
        return []
    pending, priority = sched.table.pending, _priority_rows(sched, now)
    changed = [job.started(now, start.first_ipu, priority(pending[job.id])) for job, start in ready]
    sched._commit(changed, now)
    return [start for _, start in ready]
