"""The Scheduler: owns the job table, applies policy decisions, and turns user commands into committed records.

Why every change goes Journal first, memory second: a job the client saw acknowledged must survive a crash, and
an id once handed out must never be handed out again (Slurm lost both under kill -9); the next job id is itself a
record committed with the jobs that use it. Why it returns effects instead of acting: the same object serves the
live server (which creates partitions and runs workloads) and the trace replay (which only advances virtual time).

Not thread-safe: the server serialises calls (one lock around the scheduler), as slurmctld does with its locks.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from vipu.partition.pod import PodConfig
from vipu.partition.state import Journal, NoJournal
from vipu.scheduler import queries
from vipu.scheduler.bits import block
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.deps import evaluate
from vipu.scheduler.effects import Effect, StartJob, StopJob
from vipu.scheduler.job import META_NAME, Job, PriorityBreakdown, SchedulerMeta
from vipu.scheduler.order import PendingOrder
from vipu.scheduler.policies import QUEUE_ORDER, get_policy
from vipu.scheduler.policies.base import (
    DEPENDENCY,
    HELD,
    NEVER,
    PendingInfo,
    ScheduleDecision,
    ScheduleRequest,
    qos_sets,
)
from vipu.scheduler.priority import FairShare, breakdown
from vipu.scheduler.spec import JobSpec, parse_spec
from vipu.scheduler.states import TERMINAL, TRANSITIONS, JobState
from vipu.scheduler.submit import build_jobs, check_dependency, check_request_id, resolve
from vipu.scheduler.table import JobTable

S = JobState
FINAL_STATES = (S.COMPLETED, S.FAILED, S.CANCELLED, S.TIMEOUT, S.NODE_FAIL)


class Scheduler:
    def __init__(self, pod: PodConfig, config: SchedulerConfig | None = None, journal: Journal | None = None):
        self.pod = pod
        self.config = config or SchedulerConfig()
        self.journal = journal or NoJournal()
        self.policy = get_policy(self.config.policy)
        self.total = pod.ipus
        self.full_mask = (1 << pod.ipus) - 1
        self.failed_mask = 0
        self.table = JobTable()
        self.fairshare = FairShare(self.config.fairshare_half_life)
        self.order = PendingOrder(QUEUE_ORDER[self.config.policy], self.config, pod.ipus, self.fairshare)
        self.pending_info: dict[int, PendingInfo] = {}  # the last cycle's reason and estimated start per job
        self.last_decision: ScheduleDecision | None = None  # explains the jobs the last cycle did not reach
        self.last_cycle_at: float | None = None

    # -- commit, then memory ----------------------------------------------------------------------------------
    def _commit(self, jobs: list[Job], now: float, meta: SchedulerMeta | None = None) -> None:
        puts = [("job", str(j.id), j) for j in jobs]
        if meta is not None:
            puts.append(("scheduler_meta", META_NAME, meta))
        if puts:
            self.journal.commit(puts, [])
        self._remember(jobs, now)

    def _remember(self, jobs: Iterable[Job], now: float) -> None:
        table, order = self.table, self.order
        for j in jobs:
            table.put(j)
            if j.state is S.PENDING:
                order.add(table.pending[j.id], now)
            else:
                order.remove(j.id)

    def _get(self, job_id: int) -> Job:
        job = self.table.jobs.get(job_id)
        if job is None:
            raise NotFound(f"job {job_id} does not exist; `vipu queue` lists active jobs and `vipu history` all jobs")
        return job

    def _expand(self, job_ids: Iterable[int]) -> list[Job]:
        """Job ids, where an array job id stands for all of its tasks (as scancel does)."""
        out: dict[int, Job] = {}
        for job_id in job_ids:
            tasks = self.table.arrays.get(job_id)
            for i in tasks if tasks else [job_id]:
                out[i] = self._get(i)
        return list(out.values())

    # -- commands ---------------------------------------------------------------------------------------------
    def submit(self, spec: JobSpec | dict, now: float, request_id: str | None = None) -> list[Job]:
        """Validate and queue a job (or every task of an array); returns the stored jobs, committed first.

        With a `request_id`, a retried submit returns the jobs of the first one instead of queueing them again;
        the same id with a different spec is AlreadyExists. Raises InvalidArgument (nothing stored) for a spec that
        can never run here, ResourceExhausted when the queue is full."""
        spec = parse_spec(spec) if not isinstance(spec, JobSpec) else spec
        resolved = resolve(spec, self.pod, self.config)
        if request_id is not None:
            check_request_id(request_id)
            earlier = self.table.request_ids.get(request_id)
            if earlier:
                first = self.table.jobs[earlier[0]]
                if first.spec != resolved:
                    raise AlreadyExists(
                        f"request_id {request_id!r} was already used for job {earlier[0]} with a different spec; use a"
                        " new request id for a new job"
                    )
                return [self.job(i) for i in earlier]
        array = resolved.parsed_array(self.config.max_array_tasks)
        count = len(array.indices) if array else 1
        active = len(self.table.pending) + len(self.table.running)
        if active + count > self.config.max_jobs:
            raise ResourceExhausted(
                f"the queue holds {active} jobs and this submit adds {count}; at most {self.config.max_jobs} may be"
                " queued or running (max_jobs): wait for some to finish or cancel some"
            )
        first_id = self.table.next_id
        check_dependency(resolved, self.table, range(first_id, first_id + count))
        jobs = build_jobs(resolved, first_id, count, now, request_id, array.indices if array else None)
        self._commit(jobs, now, SchedulerMeta(next_job_id=first_id + count))
        return jobs

    def cancel(self, job_ids: Iterable[int], now: float) -> list[Effect]:
        """Cancel pending and running jobs (an array job id cancels its active tasks); all or nothing.

        A job named directly that already ended is FailedPrecondition."""
        ids = list(job_ids)
        jobs = []
        for job in self._expand(ids):
            if job.state in TERMINAL:
                if job.id in ids:
                    raise FailedPrecondition(f"job {job.id} already ended ({job.state.value}); nothing to cancel")
                continue
            jobs.append(job)
        changed, effects = [], []
        for job in jobs:
            if job.state is S.PENDING:
                changed.append(job.moved(S.CANCELLED, now, end_time=now))
            else:
                self._charge(job, now)
                changed.append(job.moved(S.CANCELLED, now, end_time=now))
                effects.append(StopJob(job.id, job.partition, S.CANCELLED, False))
        self._commit(changed, now)
        return effects

    def hold(self, job_id: int, now: float) -> Job:
        """Keep a pending job from starting (reason JobHeldUser) until release."""
        return self._set_held(job_id, True, now)

    def release(self, job_id: int, now: float) -> Job:
        """Let a held job be scheduled again."""
        return self._set_held(job_id, False, now)

    def _set_held(self, job_id: int, held: bool, now: float) -> Job:
        jobs = self._expand([job_id])
        for job in jobs:
            if job.state is not S.PENDING:
                verb = "held" if held else "released"
                raise FailedPrecondition(f"job {job.id} is {job.state.value}; only a PENDING job can be {verb}")
        changed = [j.model_copy(update={"held": held}) for j in jobs if j.held != held]
        self._commit(changed, now)
        return self.job(job_id)

    def requeue(self, job_id: int, now: float) -> list[Effect]:
        """Put a running or finished job back in the queue under the same id (scontrol requeue)."""
        job = self._get(job_id)
        if job.state is S.PENDING:
            raise FailedPrecondition(f"job {job_id} is already PENDING; nothing to requeue")
        if S.PENDING not in TRANSITIONS[job.state]:
            raise FailedPrecondition(f"job {job_id} is {job.state.value} and cannot be requeued; submit it again")
        effects: list[Effect] = []
        if job.state in (S.RUNNING, S.COMPLETING):
            self._charge(job, now)
            effects.append(StopJob(job.id, job.partition, S.PENDING, True))
        self._commit([_requeued(job, now)], now)
        return effects

    def job_finished(self, job_id: int, now: float, state: JobState | None = None, exit_code: int = 0) -> list[Effect]:
        """The workload of a running job ended (state None: COMPLETED on exit code 0, else FAILED)."""
        job = self._get(job_id)
        if job.state not in (S.RUNNING, S.COMPLETING):
            raise FailedPrecondition(f"job {job_id} is {job.state.value}, not running; its end was already recorded")
        if state is None:
            state = S.COMPLETED if exit_code == 0 else S.FAILED
        if state not in FINAL_STATES:
            raise InvalidArgument(f"state {state.value} is not a final state; use one of {', '.join(s.value for s in FINAL_STATES)}")
        self._charge(job, now)
        ended = job.moved(state, now, end_time=now, exit_code=exit_code)
        requeued = state is S.NODE_FAIL and job.spec.requeue
        self._commit([_requeued(ended, now) if requeued else ended], now)
        return [StopJob(job.id, job.partition, state, requeued)]

    def mark_completing(self, job_id: int, now: float, exit_code: int) -> Job:
        """The workload exited and the partition is being removed; job_finished follows once it is gone."""
        job = self._get(job_id)
        if job.state is not S.RUNNING:
            raise FailedPrecondition(f"job {job_id} is {job.state.value}, not RUNNING")
        self._commit([job.moved(S.COMPLETING, now, exit_code=exit_code)], now)
        return self.job(job_id)

    def enforce_time_limits(self, now: float) -> list[Effect]:
        """End every RUNNING job past its time limit as TIMEOUT."""
        expired = self.table.expired(now)
        for job in expired:
            self._charge(job, now)
        self._commit([j.moved(S.TIMEOUT, now, end_time=now) for j in expired], now)
        return [StopJob(j.id, j.partition, S.TIMEOUT, False) for j in expired]

    def fail_ipus(self, ipus: Iterable[int], now: float) -> list[Effect]:
        """IPUs failed: no job is placed on them, and running jobs on them end NODE_FAIL (requeued if allowed)."""
        mask = 0
        for ipu in ipus:
            if not 0 <= ipu < self.total:
                raise InvalidArgument(f"ipu {ipu} does not exist; {self.pod.name} has IPUs 0 to {self.total - 1}")
            mask |= 1 << ipu
        hit = [self.table.jobs[r.id] for r in self.table.running.values() if block(r.first_ipu, r.ipus) & mask]
        effects: list[Effect] = []
        changed = []
        for job in sorted(hit, key=lambda j: j.id):
            self._charge(job, now)
            ended = job.moved(S.NODE_FAIL, now, end_time=now)
            changed.append(_requeued(ended, now) if job.spec.requeue else ended)
            effects.append(StopJob(job.id, job.partition, S.NODE_FAIL, job.spec.requeue))
        self._commit(changed, now)
        self.failed_mask |= mask
        return effects

    def repair_ipus(self, ipus: Iterable[int]) -> None:
        for ipu in ipus:
            self.failed_mask &= ~(1 << ipu)

    def _charge(self, job: Job, now: float) -> None:
        if job.start_time is not None:
            self.fairshare.charge(job.user, job.ipus * max(0.0, now - job.start_time), now)

    # -- the scheduling cycle ---------------------------------------------------------------------------------
    def cycle(self, now: float, available_mask: int | None = None,
              allowed_masks: Mapping[str, int] | None = None, estimates: bool = True) -> list[Effect]:
        """One scheduling pass: gate (holds, dependencies), walk the queue in the policy's order, commit its starts
        and evictions, and return the effects (stops before starts).

        `available_mask`: IPUs free and healthy now (the live server passes its PodState's usable mask, which also
        excludes partitions users made by hand); None means the Pod minus running jobs and failed IPUs.
        `allowed_masks`: allocation name -> its IPUs, for jobs that name an allocation; None: the whole Pod.
        `estimates`: False skips estimated starts (trace replay); the jobs started are the same either way."""
        table = self.table
        self.last_cycle_at = now
        if not table.pending:
            self.pending_info, self.last_decision = {}, None
            return []
        info = self._gate()
        running = list(table.running.values())
        order = self.order.iterate(now, running)
        sizes = dict(table.pending_sizes)
        preempting = qos_sets(self.config.qos).preempting
        preemptors: dict[int, int] = {}
        for (qos, ipus), n in table.pending_qos.items():
            if n and qos in preempting:
                preemptors[ipus] = preemptors.get(ipus, 0) + n
        if info:
            order = (q for q in order if q.id not in info)
            for job_id in info:
                queued = table.pending[job_id]
                sizes[queued.ipus] -= 1
                if queued.qos in preempting:
                    preemptors[queued.ipus] -= 1
        if available_mask is None:
            available_mask = self.full_mask & ~table.used_mask & ~self.failed_mask
        request = ScheduleRequest(
            now=now, total_ipus=self.total, available_mask=available_mask, pending=order, running=running,
            qos=self.config.qos, healthy_mask=self.full_mask & ~self.failed_mask, allowed_masks=allowed_masks,
            max_job_test=self.config.max_job_test, sizes=sizes, preemptors=preemptors, estimates=estimates,
            shortest=table.shortest_limits(),
        )
        decision = self.policy(request)
        effects = self._apply(decision, now)
        info.update(decision.pending)
        self.pending_info, self.last_decision = info, decision
        return effects

    def _gate(self) -> dict[int, PendingInfo]:
        """Reasons for pending jobs that may not be considered at all this cycle."""
        table = self.table
        info: dict[int, PendingInfo] = {}
        for job_id in sorted(table.gated):
            job = table.jobs[job_id]
            if job.held:
                info[job_id] = PendingInfo(HELD)
                continue
            status = self.dependency_status(job)
            if status == "ok":
                table.dependency_met(job_id)
            else:
                info[job_id] = PendingInfo(DEPENDENCY if status == "wait" else NEVER)
        return info

    def dependency_status(self, job: Job) -> str:
        """'ok', 'wait' or 'never' for the job's dependency (Slurm's Dependency / DependencyNeverSatisfied)."""
        dep = job.spec.parsed_dependency()
        if dep is None:
            return "ok"
        jobs = self.table.jobs

        def targets(i: int):
            for t in self.table.arrays.get(i) or [i]:
                target = jobs.get(t)
                if target is None:
                    yield ("CANCELLED", False, True)  # forgotten: treated as ended without success
                else:
                    started = any(h.state is S.RUNNING for h in target.history)
                    yield (target.state.value, started, target.state in TERMINAL)

        def singleton_clear() -> bool:
            active = self.table.active_by_name.get((job.name, job.user), ())
            return not any(i < job.id for i in active)

        return evaluate(dep, targets, singleton_clear)

    def _apply(self, decision, now: float) -> list[Effect]:
        jobs = self.table.jobs
        changed: list[Job] = []
        stops: list[Effect] = []
        starts: list[Effect] = []
        for p in decision.preemptions:
            job = jobs[p.job_id]
            self._charge(job, now)
            ended = job.moved(S.PREEMPTED, now, end_time=now)
            requeue = p.mode == "requeue" and job.spec.requeue
            changed.append(_requeued(ended, now) if requeue else ended)
            stops.append(StopJob(job.id, job.partition, S.PREEMPTED, requeue))
        for s in decision.starts:
            job = jobs[s.job_id]
            started = job.moved(S.RUNNING, now, start_time=now, first_ipu=s.first_ipu, end_time=None, exit_code=None,
                                reason=None, estimated_start=None)
            changed.append(started)
            starts.append(StartJob(job.id, job.partition, job.ipus, s.first_ipu, s.place_mask, now,
                                   now + job.time_limit, job.spec.workload, job.spec.allocation))
        self._commit(changed, now)
        return stops + starts

    # -- queries (see queries.py) -----------------------------------------------------------------------------
    def job(self, job_id: int, now: float | None = None) -> Job:
        """One job as `vipu job` shows it: with its current reason, estimated start and (given now) priority."""
        job = queries.decorate(self, self._get(job_id))
        if now is not None and job.state is S.PENDING:
            job = job.model_copy(update={"priority": self.priority(job_id, now)})
        return job

    def queue(self, user: str | None = None) -> list[Job]:
        """squeue: running jobs by start time, then pending jobs in the last cycle's priority order."""
        return queries.queue(self, user)

    def history(self, user: str | None = None, states: Iterable[JobState] | None = None) -> list[Job]:
        """sacct: every job the scheduler remembers, by id."""
        return queries.history(self, user, states)

    def priority(self, job_id: int, now: float) -> PriorityBreakdown:
        """sprio for one pending job."""
        queued = self.table.pending.get(job_id)
        if queued is None:
            raise FailedPrecondition(f"job {job_id} is {self._get(job_id).state.value}; only pending jobs have a priority")
        factors = self.fairshare.factors(now, self.table.running.values())
        return breakdown(queued, now, self.config, self.total, factors)

    def priorities(self, now: float, user: str | None = None) -> list[PriorityBreakdown]:
        """sprio: every pending job's factors, highest priority first."""
        return queries.priorities(self, now, user)

    def info(self, available_mask: int | None = None) -> list[queries.Pod64Info]:
        """sinfo: idle, allocated and failed IPUs per Pod64 (IPU-Link domain)."""
        return queries.info(self, available_mask)

    def smallest_pending_ipus(self) -> int | None:
        sizes = [s for s, n in self.table.pending_sizes.items() if n > 0]
        return min(sizes) if sizes else None

    # -- restart ----------------------------------------------------------------------------------------------
    def recover(self, records: Iterable, now: float, partitions: Iterable[str] | None = None) -> list[Effect]:
        """Rebuild the job table from stored records after a restart (see recovery.py for what happens to jobs
        that were running); call once, on a fresh Scheduler. Returns StopJob effects for partitions to remove."""
        from vipu.scheduler.recovery import recover

        return recover(self, records, now, partitions)


def _requeued(job: Job, now: float) -> Job:
    """The job back in the queue under its id: its last run's placement and times are cleared (history keeps them)."""
    return job.moved(S.PENDING, now, start_time=None, end_time=None, first_ipu=None, exit_code=None,
                     requeue_count=job.requeue_count + 1)
