"""The walk every policy shares: take jobs in the policy's order, check limits, place, evict, reserve, explain.

Why one walk with three modes instead of three copies: the policies differ only in the order of the queue and in
what a blocked job does to the jobs behind it —
  strict    nothing behind a blocked job starts (Slurm's sched/builtin: FIFO or priority order);
  backfill  jobs behind may start now only if they do not delay any reservation (Slurm's sched/backfill);
  greedy    anything that fits starts; no reservations (a research baseline that can starve large jobs).
Gang semantics hold in all three: a job starts only on a whole aligned block, never on part of one, so two large
jobs can never each hold half of what they need. A job that no future moment can hold (failed IPUs, a small
allocation, partitions that never end) takes no reservation, so it never blocks the queue.

Cost: the first `max_job_test` jobs that reach the resource check (Slurm's bf_max_job_test) are planned on the
timeline (built only once some job cannot start now) and get an estimated start; the rest only ask "does it fit
now without touching a reservation?", a few integer operations. The walk stops as soon as nothing more can start
(no waiting size fits the free IPUs and no waiting job may preempt) and the jobs it did not reach are explained
lazily (ScheduleDecision.rest); with `estimates` off it may stop before planning the first max_job_test jobs too,
which changes no start, only the estimates shown.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, Literal

from vipu.scheduler.bits import best_fit, block, has_block
from vipu.scheduler.policies.base import (
    NODE_NOT_AVAIL,
    PRIORITY,
    RESOURCES,
    PendingInfo,
    Preemption,
    QueuedJob,
    ScheduleDecision,
    ScheduleRequest,
    Start,
    qos_sets,
)
from vipu.scheduler.policies.limits import Usage
from vipu.scheduler.policies.preempt import choose_victims
from vipu.scheduler.timeline import Timeline

Mode = Literal["strict", "backfill", "greedy"]
_WAIT = {True: PendingInfo(PRIORITY), False: PendingInfo(RESOURCES)}  # shared: most pending jobs get one of these


class _Walk:
    __slots__ = (
        "r", "mode", "estimates", "now", "total", "full", "healthy", "avail", "usage", "decision", "reservations",
        "blocked", "last_reserved", "remaining", "preemptors", "qos_sets", "preempt_qos", "_timeline", "_started",
        "_preempted", "_eventually", "_frozen", "_no_fit", "_fitting", "_feasible", "_no_victims", "shortest",
        "_evictable",
    )

    def __init__(self, request: ScheduleRequest, mode: Mode):
        self.r = request
        self.mode = mode
        self.estimates = request.estimates
        self.now = request.now
        self.total = request.total_ipus
        self.full = (1 << self.total) - 1
        self.healthy = self.full if request.healthy_mask is None else request.healthy_mask & self.full
        self.avail = request.available_mask & self.healthy
        self.usage = Usage(request.running, request.qos)
        self.decision = ScheduleDecision()
        self.reservations: list[tuple[float, int]] = []  # (start, block) of blocked jobs' reservations
        self.blocked = False  # a job ahead in the order waits for resources
        self.last_reserved = self.now  # strict mode: jobs behind a blocked job start no earlier than it
        self.remaining = dict(request.sizes) if request.sizes is not None else None
        self.preemptors = dict(request.preemptors) if request.preemptors is not None else None
        self.qos_sets = qos_sets(request.qos)
        self.preempt_qos = self.qos_sets.preempting
        self._timeline: Timeline | None = None
        self._started: list[tuple[float, int]] = []  # (end, block) of starts made before the timeline existed
        self._preempted: set[int] = set()
        self._eventually: int | None = None
        self._frozen: tuple[list[float], list[int]] | None = None
        self._no_fit: set[tuple[int, int, int]] = set()
        self._fitting: list[tuple[int, bool]] | None = None  # (size, only by eviction) that could start now
        self._feasible: dict[tuple[int, int], bool] = {}  # (size, allowed) -> can an empty, healthy Pod hold it
        self._no_victims: set[tuple[int, int, int, str]] = set()  # preemption searches that found nothing
        self.shortest = request.shortest
        self._evictable: int | None = None

    # -- lazily built views -------------------------------------------------------------------------------
    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            releases = [(r.end_by, block(r.first_ipu, r.ipus)) for r in self.r.running if r.id not in self._preempted]
            self._timeline = Timeline(self.now, self.avail, releases + self._started, self.total)
        return self._timeline

    def eventually(self) -> int:
        """IPUs free once every scheduler job has ended (partitions made by hand and failed IPUs stay out)."""
        if self._eventually is None:
            acc = self.r.available_mask
            for r in self.r.running:
                acc |= block(r.first_ipu, r.ipus)
            self._eventually = acc & self.healthy
        return self._eventually

    def allowed(self, job: QueuedJob) -> int | None:
        masks = self.r.allowed_masks
        if masks is None:
            return self.full
        return masks.get(job.allocation or "default")

    def reserved_over(self, end: float) -> int:
        """IPUs reserved for blocked jobs at some moment before `end` (a job running until `end` must avoid them)."""
        if self._frozen is None:
            acc = 0
            for s, b in self.reservations:
                if s < end:
                    acc |= b
            return acc
        starts, prefix = self._frozen
        k = bisect_left(starts, end)
        return prefix[k - 1] if k else 0

    def freeze(self) -> None:
        ordered = sorted(self.reservations)
        prefix, acc = [], 0
        for _, b in ordered:
            acc |= b
            prefix.append(acc)
        self._frozen = ([s for s, _ in ordered], prefix)

    def nothing_can_start(self) -> bool:
        """True when no waiting job can start now: for each size still waiting, no block is free outside the
        reservations that begin before its shortest time limit ends, and, for each size still waiting in a QOS that
        may preempt, not even evicting every evictable job would free such a block."""
        if self.remaining is None or self.preemptors is None:
            return False
        if self._fitting is None:
            shortest, now, avail, total = self.shortest or {}, self.now, self.avail, self.total
            fitting = []
            for size, n in self.remaining.items():
                if n <= 0:
                    continue  # counts only go down during a walk
                free = avail & ~self.reserved_over(now + shortest.get(size, 0.0))
                if has_block(free, size, total):
                    fitting.append((size, False))
                elif self.preemptors.get(size, 0) > 0 and has_block((free | self.evictable()) & self.healthy, size,
                                                                     total):
                    fitting.append((size, True))
            self._fitting = fitting
        remaining, preemptors = self.remaining, self.preemptors
        return not any((preemptors.get(s, 0) if by_eviction else remaining[s]) > 0 for s, by_eviction in self._fitting)

    def evictable(self) -> int:
        """IPUs of running jobs that some QOS may evict (cached until the next start or eviction)."""
        if self._evictable is None:
            preemptable = {victim for name in self.preempt_qos for victim in self.r.qos[name].preempt}
            mask = 0
            for r in self.r.running:
                if r.qos in preemptable and r.id not in self._preempted:
                    mask |= block(r.first_ipu, r.ipus)
            self._evictable = mask
        return self._evictable

    def feasible(self, size: int, allowed: int) -> bool:
        key = (size, allowed)
        ok = self._feasible.get(key)
        if ok is None:
            ok = self._feasible[key] = has_block(self.healthy & allowed, size, self.total)
        return ok

    # -- actions ------------------------------------------------------------------------------------------
    def start(self, job: QueuedJob, first: int, place_mask: int) -> None:
        blk = block(first, job.ipus)
        self.avail &= ~blk
        if self._timeline is not None:
            self._timeline.reserve(self.now, self.now + job.time_limit, blk)
        else:
            self._started.append((self.now + job.time_limit, blk))
        self.usage.add(job)
        self.decision.starts.append(Start(job.id, first, place_mask))
        self._no_fit.clear()
        self._no_victims.clear()
        self._fitting = None

    def try_preempt(self, job: QueuedJob, allowed: int) -> bool:
        if job.qos not in self.preempt_qos:
            return False
        reserved = self.reserved_over(self.now + job.time_limit)
        key = (job.ipus, allowed, reserved, job.qos)
        if key in self._no_victims:
            return False
        spec = self.r.qos[job.qos]
        candidates = [r for r in self.r.running if r.qos in spec.preempt and r.id not in self._preempted]
        usable = allowed & self.healthy & ~reserved
        pick = choose_victims(job, candidates, self.avail & usable, usable, self.total, self.now,
                              self.qos_sets.priority)
        if pick is None:
            self._no_victims.add(key)
            return False
        first, victims = pick
        for v in victims:
            self.decision.preemptions.append(Preemption(v.id, job.id, self.r.qos[v.qos].preempt_mode))
            blk = block(v.first_ipu, v.ipus) & self.healthy
            self.avail |= blk
            if self._timeline is not None:
                self._timeline.release_now(blk)
            self._preempted.add(v.id)
            self._evictable = None
            self._fitting = None
            self.usage.remove(v)
        self.start(job, first, block(first, job.ipus))
        return True

    def wait(self, job: QueuedJob, slot: tuple[float, int, int] | None, reserve: bool) -> None:
        reason = PRIORITY if self.blocked else RESOURCES
        if slot is None:
            self.decision.pending[job.id] = PendingInfo(reason, None)
            return
        at, first, _ = slot
        if reserve:
            blk = block(first, job.ipus)
            self.timeline.reserve(at, at + job.time_limit, blk)
            self.reservations.append((at, blk))
            self.last_reserved = at
            self._fitting = None
        self.blocked = True
        self.decision.pending[job.id] = PendingInfo(reason, at)

    # -- the two paths ------------------------------------------------------------------------------------
    def planned(self, job: QueuedJob, allowed: int) -> None:
        """One of the first max_job_test jobs: start it, or plan it on the timeline and estimate its start."""
        size, length = job.ipus, job.time_limit
        if self.mode == "strict" and self.blocked:
            slot = self.timeline.earliest(size, length, allowed, not_before=self.last_reserved)
            return self.wait(job, slot, reserve=True)
        if not self.reservations:  # nothing reserved yet: "fits now" is a question about the free IPUs only
            mask = self.avail & allowed
            if has_block(mask, size, self.total):
                return self.start(job, best_fit(mask, self.total, size), mask)  # type: ignore[arg-type]
            if self.try_preempt(job, allowed):
                return None
            return self.wait(job, self.timeline.earliest(size, length, allowed), reserve=self.mode != "greedy")
        slot = self.timeline.earliest(size, length, allowed)
        if slot is not None and slot[0] == self.now:
            return self.start(job, slot[1], slot[2])
        if self.try_preempt(job, allowed):
            return None
        self.wait(job, slot, reserve=True)

    def tail(self, job: QueuedJob, allowed: int) -> None:
        """Beyond max_job_test: start it if it fits now without touching a reservation; no estimate otherwise."""
        end = self.now + job.time_limit
        horizon = bisect_left(self._frozen[0], end) if self._frozen else 0
        key = (job.ipus, allowed, horizon)
        if key not in self._no_fit:
            mask = self.avail & allowed & ~self.reserved_over(end)
            if has_block(mask, job.ipus, self.total):
                return self.start(job, best_fit(mask, self.total, job.ipus), mask)  # type: ignore[arg-type]
            self._no_fit.add(key)
        if self.try_preempt(job, allowed):
            return
        self.decision.pending[job.id] = _WAIT[self.blocked]
        # Only a job that some future moment can hold blocks the jobs behind it (matters in strict mode).
        if not self.blocked:
            self.blocked = has_block(self.eventually() & allowed, job.ipus, self.total)

    def run(self, order: Iterable[QueuedJob]) -> ScheduleDecision:
        tested, limit = 0, self.r.max_job_test
        pending = self.decision.pending
        remaining = self.remaining
        for job in order:
            if remaining is not None:
                remaining[job.ipus] = remaining.get(job.ipus, 0) - 1
                if job.qos in self.preempt_qos and self.preemptors is not None:
                    self.preemptors[job.ipus] = self.preemptors.get(job.ipus, 0) - 1
            reason = self.usage.reason(job)
            if reason is not None:
                pending[job.id] = PendingInfo(reason)
            else:
                allowed = self.allowed(job)
                if allowed is None or not self.feasible(job.ipus, allowed):
                    pending[job.id] = PendingInfo(NODE_NOT_AVAIL)
                elif tested < limit:
                    tested += 1
                    self.planned(job, allowed)
                    if tested == limit:
                        self.freeze()
                else:
                    self.tail(job, allowed)
            strict_done = self.mode == "strict" and self.blocked and (tested >= limit or not self.estimates)
            if strict_done or ((tested >= limit or not self.estimates) and self.nothing_can_start()):
                self.decision.rest = PendingInfo(PRIORITY if self.blocked else RESOURCES)
                self.decision.limits = self.usage
                break
        return self.decision


def run(request: ScheduleRequest, order: Iterable[QueuedJob], mode: Mode) -> ScheduleDecision:
    """Walk `order` (the policy's queue order) over the request's snapshot in `mode`."""
    return _Walk(request, mode).run(order)
