"""The Scheduler: owns the job table, applies policy decisions, and turns user commands into committed records.

Why every change goes Journal first, memory second: a job the client saw acknowledged must survive a crash, and
an id once handed out must never be handed out again (Slurm lost both under kill -9); the next job id is itself a
record committed with the jobs that use it. Why it returns effects instead of acting: the same object serves the
live server (which creates partitions and runs workloads) and the trace replay (which only advances virtual time).

Not thread-safe: the server serialises calls (one lock around the scheduler), as slurmctld does with its locks.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel

from vipu.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from vipu.hardware.pod import PodConfig
from vipu.partition.pod_state import Journal, NoJournal
from vipu.partition.rules import named
from vipu.scheduler import endings, holds, updates
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.cycle import gate, run_cycle
from vipu.scheduler.claims import postpone
from vipu.scheduler.effects import Effect, StartJob
from vipu.scheduler.job_filter import NO_FILTER, JobFilter
from vipu.scheduler.job_record import META_NAME, Job, PriorityBreakdown, SchedulerMeta
from vipu.scheduler.gate_openings import Teardown
from vipu.scheduler.order import PendingOrder
from vipu.scheduler.policies import chosen
from vipu.scheduler.policies.base import PendingInfo, ScheduleDecision, qos_sets
from vipu.scheduler.multifactor import FairShare, breakdown
from vipu.scheduler.node_requests import NodeNames
from vipu.scheduler.job_spec import JobSpec, parse_spec
from vipu.scheduler.job_states import TERMINAL, TRANSITIONS, JobState
from vipu.scheduler.submission import (ResolvedSpecs, Submission, Submitted, build_jobs, check_dependency,
                                       check_submit_limits, earlier_jobs, naming_spec, resolve_begin)
from vipu.scheduler.reasons import completing, decorate
from vipu.scheduler.selection import matching_jobs, named_jobs
from vipu.scheduler.updates import JobUpdate
from vipu.scheduler.table import PENDING, JobTable, owners
from vipu.scheduler.view import QueueView
from vipu.scheduler.workload import RunExit

S = JobState
MANY_IDS = 20  # more pending jobs than this in a refusal: no command line of their ids


class Scheduler:
    def __init__(self, pod: PodConfig, config: SchedulerConfig | None = None, journal: Journal | None = None):
        self.pod = pod
        self.journal = journal or NoJournal()
        # a user's jobs with a request id, from the Journal's history once they have left memory (purge.py)
        self.recall: Callable[[str, str], list[Job]] | None = None
        self._durable = not isinstance(self.journal, NoJournal)  # NoJournal keeps nothing: no records are built
        self.total = pod.ipus
        self.full_mask = (1 << pod.ipus) - 1
        self.failed_mask = 0
        self.table = JobTable()
        self.table.nodes = NodeNames(pod)  # names sbatch -w and -x give, read into IPUs (node_requests.py)
        self.retired_qos: frozenset[str] = frozenset()  # QOS that stored jobs name but the config no longer has
        self._configure(config or SchedulerConfig())
        self.pending_info: dict[int, PendingInfo] = {}  # the last cycle's reason and estimated start per job walked
        self.last_decision: ScheduleDecision | None = None  # explains the jobs the last cycle did not reach
        self.last_cycle_at: float | None = None
        self.last_cycle_seq = 0  # table.seq when the last cycle walked: jobs ready since then were not considered
        self.offered: dict[int, Job] = {}  # the last cycle's starts on preempted jobs' IPUs: their records before

    @property
    def free_mask(self) -> int:
        """IPUs free and healthy now, as the scheduler alone knows them: the Pod minus running jobs, runs still torn
        down and failed IPUs (what a cycle, `vipu info` and startable use when the caller passes no available_mask)."""
        return self.full_mask & ~self.failed_mask & ~self.table.held_mask

    def _configure(self, config: SchedulerConfig) -> None:
        """Everything that follows from the config (an empty scheduler only: the queue order is rebuilt)."""
        self.config = config
        self.table.next_id = config.first_job_id  # (recovery goes on from the stored next id if it is higher)
        self.resolved = ResolvedSpecs(self.pod, config)
        self.policy, order = chosen(config)
        self.preempting_qos = tuple(sorted(qos_sets(config.qos).preempting))  # QOS whose jobs may evict
        self.fairshare = FairShare(config.fairshare_half_life)
        self.purged = FairShare(config.fairshare_half_life)  # the part of it that purged jobs charged (purge.py)
        self.order = PendingOrder(order, config, self.pod.ipus, self.fairshare)

    # -- commit, then memory ----------------------------------------------------------------------------------
    def _commit(self, jobs: list[Job], now: float, next_job_id: int | None = None) -> None:
        """Jobs (and the next job id, on submit) to the Journal, then into memory."""
        if self._durable:
            puts: list[tuple[str, str, BaseModel]] = [("job", str(j.id), j) for j in jobs]
            if next_job_id is not None:
                puts.append(("scheduler_meta", META_NAME, SchedulerMeta.trusted(next_job_id)))
            if puts:
                self.journal.commit(puts, [])
        self._remember(jobs, now)

    def _remember(self, jobs: Iterable[Job], now: float) -> None:
        table, order = self.table, self.order
        leaving = []  # (the order forgets them together: a cycle may start thousands)
        for j in table.put_each(jobs, now):
            if j.state is PENDING:
                order.add(table.pending[j.id], now, j.id in table.gated)
            else:
                leaving.append(j.id)
        order.remove_many(leaving)

    def _get(self, job_id: int) -> Job:
        return self.table.get(job_id)

    def _whole_array(self, job_id: int, single: bool) -> bool:
        return self.table.whole_array(job_id, single)

    def _expand(self, job_ids: Iterable[int], single: bool = False) -> list[Job]:
        return self.table.expand(job_ids, single)

    # -- commands ---------------------------------------------------------------------------------------------
    def submit(self, spec: JobSpec | dict, now: float, request_id: str | None = None) -> list[Job]:
        """Validate and queue a job (or every task of an array); returns the stored jobs, committed first.

        With a `request_id`, a retried submit returns the jobs of the first one instead of queueing them again;
        the same id with a different spec is AlreadyExists. Raises InvalidArgument (nothing stored) for a spec that
        can never run here, ResourceExhausted when the queue is full."""
        return self.submit_many([Submission(spec, request_id)], now)[0].jobs

    def submit_many(self, submissions: Sequence[Submission], now: float) -> list[Submitted]:
        """Several submits as one: each checked as submit checks it, then all stored in one commit, or none.

        Why all or none: a user who fixes the one refused spec and submits the lot again gets no second copy of the
        others, request ids or not. A refusal names its spec (`spec 3 of 40 (b.yaml): ...`) when there are several.
        A request id given twice in one call is refused: the second could only be a copy of the first."""
        first_id = self.table.next_id
        active = len(self.table.pending) + len(self.table.running)
        added: Counter = Counter()  # what the specs before this one add, by owner (table.owners)
        seen: dict[str, int] = {}
        out: list[Submitted] = []
        for k, submission in enumerate(submissions):
            with naming_spec(k, len(submissions), submission.source):
                request_id = submission.request_id
                if request_id in seen:
                    raise InvalidArgument(f"request_id {request_id!r} was given to spec {seen[request_id] + 1} too;"
                                          " give each spec its own request id")
                if request_id is not None:
                    seen[request_id] = k
                done = self._prepare(submission, now, first_id, active, added)
            if not done.duplicate:
                first_id += len(done.jobs)
                active += len(done.jobs)
                added.update(owner for job in done.jobs for owner in owners(job))
            out.append(done)
        fresh = [job for done in out if not done.duplicate for job in done.jobs]
        if fresh:
            self._commit(fresh, now, first_id)
        return out

    def _prepare(self, submission: Submission, now: float, first_id: int, active: int,
                 added: Counter | None = None) -> Submitted:
        """The jobs of one submit, numbered from first_id, with `active` jobs already queued or running; or the
        jobs of an earlier submit with the same request id. Nothing is stored."""
        spec, request_id = submission.spec, submission.request_id
        spec = parse_spec(spec) if not isinstance(spec, JobSpec) else spec
        resolved = self.resolved(spec)
        if resolved.qos in self.retired_qos:
            raise InvalidArgument(
                f"qos {resolved.qos!r} is no longer in the scheduler config (only jobs stored before it was removed"
                f" still name it); use one of {', '.join(sorted(set(self.config.qos) - self.retired_qos))}"
            )
        earlier = earlier_jobs(self.table, resolved, request_id, self.recall) if request_id is not None else []
        if earlier:
            return Submitted([self.job(j.id) if j.id in self.table.jobs else j for j in earlier], duplicate=True)
        array = resolved.parsed_array(self.config.max_array_tasks)
        count = len(array.indices) if array else 1
        if active + count > self.config.max_jobs:
            queued = len(self.table.pending) + len(self.table.running)
            before = f", the specs before this one add {active - queued}," if active > queued else ""
            raise ResourceExhausted(
                f"the queue holds {queued} jobs{before} and this submit adds {count}; at most {self.config.max_jobs}"
                " may be queued or running (max_jobs): wait for some to finish or cancel some", reason="QUEUE_FULL"
            )
        check_submit_limits(self.table, self.config, resolved, count, added or Counter())
        self.table.nodes.check(resolved)
        check_dependency(resolved, self.table, range(first_id, first_id + count),
                         call_ids=range(self.table.next_id, first_id))
        begin = resolve_begin(resolved, now) if resolved.begin is not None else None
        jobs = build_jobs(resolved, first_id, count, now, request_id, array.indices if array else None, begin,
                          submission.held, submission.uid)
        return Submitted(jobs, duplicate=False)

    def check_allocation_unused(self, allocation: str) -> None:
        """FailedPrecondition naming the pending jobs that asked for `allocation`: removed from under them, they
        would wait forever."""
        waiting = [self.table.jobs[i].display_id for i, q in sorted(self.table.pending.items())
                   if q.allocation == allocation]
        if waiting:
            how = f" (`vipu cancel {' '.join(waiting)}`)" if len(waiting) <= MANY_IDS else ""
            raise FailedPrecondition(f"allocation {allocation} has {named('pending job', waiting)} that asked for it;"
                                     f" cancel {'it' if len(waiting) == 1 else 'them'} first{how}")

    def cancel(self, job_ids: Iterable[int], now: float, single: bool = False, match: JobFilter = NO_FILTER,
               why: str | None = None, uid: int | None = None) -> list[Effect]:
        """scancel (endings.cancel): pending and running jobs end CANCELLED, all or nothing."""
        return endings.cancel(self, job_ids, now, single, match, why, uid)

    def matching(self, match: JobFilter, visible: Callable[[str], bool]) -> list[int]:
        """The active jobs (each array task on its own) of users `visible` accepts that match every filter, by id:
        what scancel's filters select when no job is named."""
        return [job.id for job in matching_jobs(self.table, match, visible)]

    def named_jobs(self, job_ids: Iterable[int], single: bool, match: JobFilter, verb: str) -> list[Job]:
        """The active jobs `job_ids` name that match (selection.named_jobs), for a signal to reach."""
        return named_jobs(self.table, job_ids, single, match, verb)

    def update(self, job_id: int, update: JobUpdate, now: float, admin: bool = False,
               single: bool = False) -> list[Job]:
        """scontrol update job (updates.py): commit the changed records; returns them. A running job's new time
        limit is the driver's to watch (Driver.limit_changed)."""
        changed = updates.changed(self, job_id, single, update, now, admin)
        self._commit(changed, now)
        return changed

    def hold(self, job_id: int, now: float, admin: bool = False, single: bool = False) -> Job:
        """Keep a pending job (an array job id: its pending tasks) from starting until release (holds.py); an admin
        hold with `admin`, whoever the caller decides may place one. Returns the job (an array's first task)."""
        self._commit(holds.changed(self, job_id, True, admin, single, now), now)
        return self.job(job_id)

    def release(self, job_id: int, now: float, admin: bool = False, single: bool = False) -> Job:
        """Let held jobs be scheduled again (holds.py); `admin`: the caller is an admin, without which an admin
        hold is PermissionDenied and nothing is released."""
        self._commit(holds.changed(self, job_id, False, admin, single, now), now)
        return self.job(job_id)

    def check_release(self, job_id: int, admin: bool, single: bool = False) -> None:
        holds.check_release(self, job_id, admin, single)

    def requeue(self, job_id: int, now: float, single: bool = False, hold: bool = False) -> list[Effect]:
        """scontrol requeue, with `hold` requeuehold (endings.requeue)."""
        return endings.requeue(self, job_id, now, single, hold)

    def cleaning(self, job_id: int, now: float, teardown: Teardown = Teardown()) -> None:
        """The job's run that just ended is still torn down (its work ends later, on its block): the job may not
        start again until `cleaned`, pending now or requeued later (Slurm's completing job; a requeued one waits,
        reason Cleaning). Its IPUs are busy, and backfill counts them free from `teardown.free_by` (KillWait)."""
        if (queued := self.table.cleaning_started(job_id, teardown)) is not None:
            self.order.add(queued, now, gated=True)

    def cleaned(self, job_id: int, now: float) -> None:
        """The job's last run is torn down: it may start again."""
        if (queued := self.table.cleaning_done(job_id)) is not None:
            self.order.add(queued, now)

    def postponed(self, start: StartJob, now: float) -> bool:
        """Whether a start must wait for a victim's teardown; if so its job is pending again (claims.py)."""
        return postpone(self, start, now)

    def job_finished(self, job_id: int, now: float, state: JobState | None = None, exit_code: int = 0,
                     signal: int = 0, why: str | None = None) -> list[Effect]:
        """The workload of a running job ended (endings.job_finished)."""
        return endings.job_finished(self, job_id, now, state, exit_code, signal, why)

    def time_limit_reached(self, job_id: int, started: float, now: float) -> list[Effect]:
        """The run that began at `started` reached its time limit: TIMEOUT (endings.time_limit_reached)."""
        return endings.time_limit_reached(self, job_id, started, now)

    def fail_ipus(self, ipus: Iterable[int], now: float, cause: str = "") -> list[Effect]:
        """IPUs failed: running jobs on them end NODE_FAIL (endings.fail_ipus)."""
        return endings.fail_ipus(self, ipus, now, cause)

    def repair_ipus(self, ipus: Iterable[int]) -> None:
        self.failed_mask &= ~sum(1 << ipu for ipu in set(ipus))

    # -- the scheduling cycle ---------------------------------------------------------------------------------
    def cycle(self, now: float, available_mask: int | None = None,
              allowed_masks: Mapping[str, int] | None = None, estimates: bool = True) -> list[Effect]:
        """One scheduling pass: gate (holds, begin times, dependencies), walk the queue in the policy's order, commit its starts
        and evictions, and return the effects (stops before starts); see cycle.py.

        `available_mask`: IPUs free and healthy now (the live server passes its PodState's usable mask, which also
        excludes partitions users made by hand); None means free_mask (the Pod minus running jobs and failed IPUs).
        `allowed_masks`: allocation name -> its IPUs, for jobs that name an allocation; None: the whole Pod.
        `estimates`: False skips estimated starts (trace replay); the jobs started are the same either way."""
        return run_cycle(self, now, available_mask, allowed_masks, estimates)

    def gate(self, now: float) -> int:
        """Evaluate the dependencies that changes since the cycle may have met (cycle.gate) now, not at the next
        cycle; returns how many jobs that let in (a cycle should then follow at once)."""
        return gate(self, now) if self.table.recheck else 0

    # -- reads of the live queue (listings read a view: view.py) ------------------------------------------------
    def job(self, job_id: int, now: float | None = None) -> Job:
        """One job as `vipu job` shows it: with its current reason, estimated start and (given now) priority."""
        job = decorate(self, completing(self.table, self._get(job_id)), now)
        if now is not None and job.state is S.PENDING:
            job = job.model_copy(update={"priority": self.priority(job_id, now)})
        return job

    def view(self) -> QueueView:
        """The queue now, for reads (view.py): call under the lock that serialises this Scheduler's writers, then
        read it without."""
        return QueueView(self)

    def priority(self, job_id: int, now: float) -> PriorityBreakdown:
        """sprio for one pending job (of the live queue: `view()` for listings)."""
        queued = self.table.pending.get(job_id)
        if queued is None:
            job = self._get(job_id)
            raise FailedPrecondition(f"job {job.display_id} is {job.state.value}; only pending jobs have a priority")
        factors = self.fairshare.factors(now, self.table.running.values())
        return breakdown(queued, now, self.config, self.total, factors)

    def smallest_eligible_ipus(self) -> int | None:
        """The size of the smallest pending job that may start now (not held, begun, dependencies met)."""
        return min((s for s, n in self.table.ready_sizes.items() if n > 0), default=None)

    # -- restart ----------------------------------------------------------------------------------------------
    def purge(self, now: float) -> list[Job]:
        """Move jobs ended more than min_job_age ago out of memory into the Journal's history (purge.py)."""
        from vipu.scheduler.purge import purge

        return purge(self, now)

    def recover(self, records: Iterable, now: float, partitions: Iterable[str] | None = None,
                resumable: Callable[[Job], bool] | None = None, event: str = "the controller's restart",
                lost_why: str | None = None, recorded_end: Callable[[Job], RunExit | None] | None = None
                ) -> list[Effect]:
        """Rebuild the job table from stored records after a restart (see recovery.py for what happens to jobs
        that were running); call once, on a fresh Scheduler. Returns StopJob effects for partitions to remove.
        `event` names the restart (or a rollback) in the jobs' notes, `lost_why` why a run that did not go on ended,
        `recorded_end` how it ended, if recorded where it ran."""
        from vipu.scheduler.recovery import recover

        return recover(self, records, now, partitions, resumable, event, lost_why, recorded_end)
