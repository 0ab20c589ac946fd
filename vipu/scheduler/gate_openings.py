"""How a gated pending job (held, not begun, waiting on a dependency, cleaning, or claiming) leaves the gate: JobTable's
methods for the moments a gate opens, kept apart from the indexes they keep in step (table.py).

A job is let in only when nothing else still holds it back: its hold released, its begin time come, its dependency
met, its last run torn down (cleaning: requeued while its program was still ending), and the runs it preempted
torn down (claims.py), whichever is last.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Callable, NamedTuple

from vipu.scheduler.bits import block

if TYPE_CHECKING:
    from vipu.scheduler.claims import Claim
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.policies.base import PendingInfo, QueuedJob


class Teardown(NamedTuple):
    """A stopped run still being torn down (Slurm's completing job): its block stays busy, and is free by `free_by`
    at the latest (its stop's KillWait), which is when backfill counts on it."""

    free_by: float = math.inf  # inf: no bound is known
    first_ipu: int | None = None  # None: its block is not known
    ipus: int = 0

    @property
    def mask(self) -> int:
        return 0 if self.first_ipu is None else block(self.first_ipu, self.ipus)


class GateOpenings:
    """Mixed into JobTable, whose indexes these read and change."""

    jobs: dict[int, Job]
    pending: dict[int, QueuedJob]
    gated: set[int]
    cleaning: dict[int, Teardown]
    cleaning_mask: int
    claims: dict[int, Claim]
    claimed_mask: int
    not_begun: set[int]
    begins: list[tuple[float, int]]
    gate_info: dict[int, PendingInfo]
    recheck: set[int]
    deps_met: set[int]
    dependency_times: list[tuple[float, int]]
    _ready: Callable[[QueuedJob], None]  # JobTable's: the job counts as ready
    _unready: Callable[[QueuedJob], None]
    _watch: Callable[[Job, bool], None]  # (un)register a job under what its dependency reads

    def dependency_met(self, job_id: int) -> bool:
        """Slurm drops a satisfied dependency for good; True if the job may now be scheduled (it is not held and
        its begin time has come)."""
        job = self.jobs[job_id]
        self._watch(job, False)
        self.deps_met.add(job_id)
        self.gate_info.pop(job_id, None)
        if job.held or job_id in self.not_begun or job_id in self.cleaning:
            return False
        self.gated.discard(job_id)
        self._ready(self.pending[job_id])
        return True

    def begun(self, now: float) -> list[QueuedJob]:
        """Jobs whose begin time has come by `now` leave not_begun; returns those that may now be scheduled (not
        held, dependency met), which this call has made ready. Costs only the jobs that begin, never the others."""
        heap, waiting, out = self.begins, self.not_begun, []
        while heap and heap[0][0] <= now:
            _, job_id = heapq.heappop(heap)
            if job_id not in waiting:
                continue  # it left the queue, or was re-filed with a later heap entry
            waiting.discard(job_id)
            job = self.jobs[job_id]
            if job.held or job_id in self.cleaning or (job.spec.dependency is not None
                                                       and job_id not in self.deps_met):
                continue  # still gated: release, its dependency being met, or its cleanup's end lets it in
            self.gated.discard(job_id)
            queued = self.pending[job_id]
            self._ready(queued)
            out.append(queued)
        return out

    def cleaning_started(self, job_id: int, teardown: Teardown = Teardown()) -> QueuedJob | None:
        """The job's last run is still being torn down: it may not start until cleaning_done. Returns the job if
        this gated it (the caller files it again in the queue order)."""
        self.cleaning[job_id] = teardown
        self.cleaning_mask |= teardown.mask  # (runs hold disjoint blocks)
        queued = self.pending.get(job_id)
        if queued is None or job_id in self.gated:
            return None
        self._unready(queued)
        self.gated.add(job_id)
        return queued

    def cleaning_done(self, job_id: int) -> QueuedJob | None:
        """The job's last run is torn down; returns the job if that made it ready (nothing else gates it)."""
        if job_id not in self.cleaning:
            return None
        self.cleaning_mask &= ~self.cleaning.pop(job_id).mask
        return self._let_in(job_id)

    def teardowns(self, failed_mask: int) -> list[Teardown]:
        """The runs still torn down, (free by, first IPU, IPUs), whose blocks hold none of the IPUs claimed for a
        preemptor or failed: the moments backfill may count on them."""
        if not self.cleaning:
            return []
        kept = self.claimed_mask | failed_mask
        return [t for t in self.cleaning.values()
                if t.first_ipu is not None and t.free_by < math.inf and not t.mask & kept]

    def claim(self, job_id: int, claim: Claim) -> None:
        """A preemptor waits for its victims' teardown, holding the IPUs it was given (claims.py)."""
        self.claims[job_id] = claim
        self.claimed_mask |= claim.mask

    def claim_ended(self, job_id: int) -> QueuedJob | None:
        """The job's claim ends (it starts, or the claim is dropped); returns the job if that made it ready."""
        claim = self.claims.pop(job_id)
        self.claimed_mask &= ~claim.mask
        return self._let_in(job_id)

    def _let_in(self, job_id: int) -> QueuedJob | None:
        queued, job = self.pending.get(job_id), self.jobs.get(job_id)
        if queued is None or job is None or job_id not in self.gated or job.held or job_id in self.not_begun or (
                job_id in self.cleaning or job_id in self.claims) or (
                job.spec.dependency is not None and job_id not in self.deps_met):
            return None
        self.gated.discard(job_id)
        self._ready(queued)
        return queued

    def dependency_wait(self, job_id: int, at: float) -> None:
        """The job's dependency is met at `at` by time alone (after:ID+MINUTES): evaluate it again then. Old entries
        (a job that left, or was evaluated again) are dropped when due, or when they outnumber the waits."""
        heap = self.dependency_times
        heapq.heappush(heap, (at, job_id))
        if len(heap) > 2 * len(self.gate_info) + 64:
            self.dependency_times = [(i.estimated_start, j) for j, i in self.gate_info.items()  # type: ignore[misc]
                                     if i.estimated_start is not None]
            heapq.heapify(self.dependency_times)

    def dependency_times_due(self, now: float) -> None:
        """The waits whose time has come by `now` go back to be evaluated (recheck)."""
        heap = self.dependency_times
        while heap and heap[0][0] <= now:
            _, job_id = heapq.heappop(heap)
            if job_id in self.gated and job_id not in self.deps_met:  # else it left, or its dependency was met
                self.recheck.add(job_id)

    def next_wake(self) -> float | None:
        """When a gate may open by time alone: the earliest begin time or dependency wait still to come (possibly
        of a job that has left since: waking then is harmless), or None."""
        times = [heap[0][0] for heap in (self.begins, self.dependency_times) if heap]
        return min(times) if times else None
