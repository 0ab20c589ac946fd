"""The queue at one moment, for reads: squeue, sacct, sprio, sinfo and the startable count run on it, not on the
live Scheduler.

Why a copy: a listing of 20,000 jobs takes a quarter of a second to order, explain and convert, and the live queue
must keep taking submissions meanwhile. `Scheduler.view()` copies the indexes reads need under the caller's lock
(pointer copies: a few milliseconds for 20,000 jobs; job records are immutable and shared), and everything else
happens on the copy, outside the lock. The copy has the attributes queries.py reads, with the same names as the
Scheduler's, so one query code serves both.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from vipu.errors import FailedPrecondition
from vipu.scheduler import queries
from vipu.scheduler.job_record import Job, PriorityBreakdown
from vipu.scheduler.multifactor import breakdown
from vipu.scheduler.startable import startable
from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


class QueueView:
    def __init__(self, s: Scheduler):
        """Taken under the lock that serialises the Scheduler's writers."""
        self.pod, self.config, self.total, self.full_mask = s.pod, s.config, s.total, s.full_mask
        self.failed_mask = s.failed_mask
        self.table = s.table.read_copy()
        self.order = s.order.read_copy()
        self.fairshare = self.order.fairshare  # the copy the order shares, as the Scheduler's does
        self.pending_info = s.pending_info  # each cycle makes a new one: never changed once made
        self.last_decision = s.last_decision
        self.last_cycle_seq, self.last_cycle_at = s.last_cycle_seq, s.last_cycle_at

    @property
    def free_mask(self) -> int:
        return self.full_mask & ~self.failed_mask & ~self.table.used_mask

    def jobs_by_state(self) -> Counter[JobState]:
        return Counter(job.state for job in self.table.jobs.values())

    def job(self, job_id: int, now: float | None = None) -> Job:
        """One job as `vipu show job` shows it: with its reason, estimated start and (given now) priority."""
        job = queries.decorate(self, self.table.get(job_id))
        if now is not None and job.state is JobState.PENDING:
            job = job.updated({"priority": self.priority(job_id, now)})
        return job

    def queue(self, keep: Callable[[Job], bool] | None = None, now: float | None = None) -> Iterator[Job]:
        """squeue, lazily: running jobs by start time, then pending jobs in the last cycle's priority order; with
        `keep`, only the jobs it keeps (filtered before their reasons and estimates are worked out); given `now`,
        pending jobs carry their priority then (squeue -o %Q)."""
        return queries.queue(self, keep, now)

    def history(self, keep: Callable[[Job], bool] | None = None, states: Iterable[JobState] | None = None,
                duplicates: bool = False, limit: int = 0) -> list[Job]:
        """sacct: every job the scheduler remembers (kept by `keep`) once, as it is now, if its state is one of
        `states` (None: any). `duplicates` (sacct --duplicates): also each earlier run that ended in one of
        `states` (a job preempted, lost or requeued by hand went back to the queue after it), as the job was then.
        Rows in the order they ended (a row not ended: when it entered its state), ties by job id; `limit` > 0
        keeps the last `limit` of them, the most recently ended."""
        return queries.history(self, keep, states, duplicates, limit)

    def priority(self, job_id: int, now: float) -> PriorityBreakdown:
        """sprio for one pending job."""
        queued = self.table.pending.get(job_id)
        if queued is None:
            job = self.table.get(job_id)
            raise FailedPrecondition(f"job {job.display_id} is {job.state.value}; only pending jobs have a priority")
        factors = self.fairshare.factors(now, self.table.running.values())
        return breakdown(queued, now, self.config, self.total, factors)

    def priorities(self, now: float, user: str | None = None, ids: Iterable[int] | None = None,
                   single: bool = False) -> list[PriorityBreakdown]:
        """sprio: every pending job's factors, highest priority first; with `ids` only those (an array job id stands
        for its pending tasks unless `single`, as in sprio -j), refusing one that does not exist or is not pending."""
        return queries.priorities(self, now, user, ids, single)

    def info(self, available_mask: int | None = None, drained_mask: int = 0,
             draining_mask: int = 0) -> list[queries.Pod64Info]:
        """sinfo: idle, allocated, draining, drained and failed IPUs per Pod64 (IPU-Link domain)."""
        return queries.info(self, available_mask, drained_mask, draining_mask)

    def startable(self, available_mask: int | None = None, allowed_masks: Mapping[str, int] | None = None) -> int:
        """How many pending jobs could start now, held back by nothing but the scheduler (see startable.py)."""
        return startable(self, available_mask, allowed_masks)
