"""The walk every policy shares: take jobs in the policy's order, check limits, place, evict, reserve, explain.

Why one walk with two modes instead of four copies: the policies differ only in the order of the queue and in
what a blocked job does to the jobs behind it —
  strict    nothing behind a blocked job starts (Slurm's sched/builtin: FIFO or priority order);
  backfill  jobs behind may start now only if they do not delay any reservation (Slurm's sched/backfill).
(sjf once had a third, greedy mode: anything that fits starts, no reservations. It let a stream of small jobs
starve the shortest job in its own order when that job was large, so sjf now backfills in its order.)
Gang semantics hold in both: a job starts only on a whole aligned block, never on part of one, so two large
jobs can never each hold half of what they need. A job that no future moment can hold (failed IPUs, a small
allocation, partitions that never end) takes no reservation, so it never blocks the queue.

Cost: the first `max_job_test` jobs that reach the resource check (Slurm's bf_max_job_test) are planned on the
timeline (built only once some job cannot start now) and get an estimated start; the rest only ask "does it fit
now without touching a reservation?", a few integer operations. The walk stops as soon as nothing more can start
(no waiting size fits the free IPUs and no waiting job may preempt) and the jobs it did not reach are explained
lazily (ScheduleDecision.rest); with `estimates` off it may stop before planning the first max_job_test jobs too,
which changes no start, only the estimates shown.

With `estimates` off (trace replay) the walk also skips what only an estimate needs: a waiting job's slot is not
searched for unless a job behind it needs its reservation (need(): often, as for a large job whose reservation
lies beyond any job's time limit, none does). Every start is the one the full walk makes; a property test compares
the two on random workloads.

Limits over time (plans.py): a job of an array with %N or of a QOS with limits is reserved, and estimated, no
earlier than its group has room for it, counting running jobs and the reservations ahead of it; a job that fits
now but would take room such a reservation needs waits instead.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from itertools import chain
from typing import Iterable, Literal

from vipu.scheduler.bits import best_fit, block, has_block
from vipu.scheduler.policies.base import (
    PendingInfo,
    QueuedJob,
    RunningJob,
    ScheduleDecision,
    ScheduleRequest,
    Start,
    new_record,
    qos_sets,
)
from vipu.scheduler.policies.capacity import Capacity
from vipu.scheduler.policies.fitting import Fitting
from vipu.scheduler.policies.limits import Usage
from vipu.scheduler.policies.plans import LimitPlan
from vipu.scheduler.policies.eviction import try_preempt
from vipu.scheduler.policies.preempt import Victims
from vipu.scheduler.policies.interval_timeline import IntervalTimeline
from vipu.scheduler.policies.order_walk import WAIT, walk_order
from vipu.scheduler.policies.rack_masks import RACK, RackMasks
from vipu.scheduler.policies.reservations import Timeline, blocks_mask, without_runs
from vipu.scheduler.policies.reserved_before import ReservedBefore

Mode = Literal["strict", "backfill"]
SMALL_POD = 1024  # IPUs up to which the timeline keeps a mask per interval (interval_timeline.py says why)
RACKS_AFTER = 16  # placements on a large Pod's free IPUs in one walk before they are kept rack by rack (place())


class _Walk:
    __slots__ = (
        "r", "mode", "estimates", "now", "total", "full", "healthy", "avail", "usage", "decision", "reservations",
        "blocked", "last_reserved", "remaining", "preemptors", "qos_sets", "preempt_qos", "_timeline", "_started",
        "_preempted", "_frozen", "_no_fit", "_fitting", "_no_victims", "shortest", "_evictable", "_lazy",
        "_lazy_floor", "plan", "capacity", "_candidates", "_victims", "limit_floor", "_refresh_at", "racks",
        "_placed", "_node_masks", "_before",
    )

    def __init__(self, request: ScheduleRequest, mode: Mode, ascending_limits: bool = False):
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
        self.qos_sets = qos_sets(request.qos)
        self.plan = LimitPlan(self.now, request.running, request.qos, self.qos_sets.limited)
        self.capacity = Capacity(request, self.full, self.healthy)
        self.reservations: list[tuple[float, int]] = []  # (start, block) of blocked jobs' reservations
        self._before = ReservedBefore(self.reservations)
        self.blocked = False  # a job ahead in the order waits for resources
        self.last_reserved = self.now  # strict mode: jobs behind a blocked job start no earlier than it
        self.remaining = dict(request.sizes) if request.sizes is not None else None
        self.preemptors = dict(request.preemptors) if request.preemptors is not None else None
        self.preempt_qos = self.qos_sets.preempting
        self._timeline: Timeline | IntervalTimeline | None = None
        self._started: list[tuple[float, int, int]] = []  # (end, first IPU, size): starts before the timeline
        self._preempted: dict[int, RunningJob] = {}  # the jobs evicted in this walk, by id
        self._frozen: tuple[list[float], list[int]] | None = None
        self._no_fit: set[int | tuple[int, int, int]] = set()  # fit_key()s that found no block
        self._fitting = Fitting()  # the sizes that could start now
        self._no_victims: set[tuple[int, int, object, str]] = set()  # preemption searches that found nothing
        self.shortest = request.shortest
        self._evictable: int | None = None
        self._candidates: dict[str, list] = {}  # QOS -> [running jobs it may evict, the IPUs of those not evicted,
        # their preempt.rank() once a Victims needs it]
        self._victims: dict[tuple[str, int], Victims] = {}  # (QOS, size) -> those jobs by what evicting costs
        self._lazy: list[tuple[QueuedJob, int, float]] = []  # (job, allowed, lower bound): reservations to make
        self._lazy_floor = math.inf  # none of them begins before this (see need())
        # ascending_limits: the order comes by time limit (sjf), so no job still to come has a shorter limit than
        # the last one walked, a tighter bound than request.shortest (see run()); None: the order says nothing
        self.limit_floor: float | None = 0.0 if ascending_limits else None
        self._refresh_at = 0  # jobs walked before the sizes that fit may be worked out again for a higher floor
        self.racks: RackMasks | None = None  # avail rack by rack, once placements on it are many (place())
        self._placed = 0 if self.total > SMALL_POD and self.total % RACK == 0 else -1  # -1: never
        self._node_masks: dict[tuple[str | None, int], int] = {}  # allowed() of jobs with a nodelist or exclude

    # -- lazily built views -------------------------------------------------------------------------------
    @property
    def timeline(self) -> Timeline | IntervalTimeline:
        if self._timeline is None:
            if self._frozen is not None:  # freeze() dropped it: a bug, not a state to rebuild it from
                raise RuntimeError("the timeline is planned only for the first max_job_test jobs")
            preempted, groups = self._preempted, self.r.releases
            kind = Timeline if self.total > SMALL_POD else IntervalTimeline
            # runs still torn down free their blocks as a running job does at its end_by
            started = chain(self._started, self.r.teardowns) if self.r.teardowns else self._started
            if groups is not None:  # (the evicted are free now: their blocks are released no more at their end)
                groups = without_runs(groups, preempted.values()) if preempted else groups
                self._timeline = kind(self.now, self.avail, started, self.total, groups)
            else:
                releases = ((r.end_by, r.first_ipu, r.ipus) for r in self.r.running
                            if not preempted or r.id not in preempted)
                self._timeline = kind(self.now, self.avail, chain(releases, started), self.total)
        return self._timeline

    def allowed(self, job: QueuedJob) -> int | None:
        masks = self.r.allowed_masks
        base = self.full if masks is None else masks.get(job.allocation or "default")
        if job.nodes is None or base is None:
            return base
        # one object per (allocation, nodes) for the walk: the caches keyed by id(allowed) hold it (see fit_key)
        key = (job.allocation, job.nodes)
        mask = self._node_masks.get(key)
        if mask is None:
            mask = self._node_masks[key] = base & job.nodes
        return mask

    def reserved_over(self, end: float) -> int:
        """IPUs reserved for blocked jobs at some moment before `end` (a job running until `end` must avoid them)."""
        return self.reserved(end)[0]

    def reserved(self, end: float) -> tuple[int, object]:
        """reserved_over(end) and a key for it that is cheap to hash: equal keys, equal masks (reserved_before.py)."""
        if self._lazy_floor < end:
            self.need(end)
        if self._frozen is None:
            return self._before.before(end)
        starts, prefix = self._frozen
        k = bisect_left(starts, end)
        return (prefix[k - 1] if k else 0), k

    def unreserved(self, mask: int, end: float) -> int:
        """`mask` less the IPUs reserved before `end` (an XOR with the full mask, then an AND: a negated mask costs
        several times as much on a large Pod)."""
        reserved = self.reserved_over(end)
        return mask & (self.full ^ reserved) if reserved else mask

    def freeze(self) -> None:
        self.need(math.inf)
        ordered = sorted(self.reservations)
        prefix, acc = [], 0
        for _, b in ordered:
            acc |= b
            prefix.append(acc)
        self._frozen = ([s for s, _ in ordered], prefix)
        # Only planned() and wait() read the timeline, and only for the first max_job_test jobs: the rest ask
        # reserved_over(), which reads the reservations. Starts stop updating it, which on a large Pod is most of
        # the cost of a cycle in which hundreds of jobs start.
        self._timeline = None

    def need(self, end: float) -> None:
        """Make the lazy reservations (see wait()) that may begin before `end`, each exactly as it would have been
        made at its turn in the walk, so that reserved_over(end) is exact.

        Why the others may wait: a reservation never begins before the Pod without any reservation (the timeline's
        base, fixed during a walk but for evictions, before which all are made) holds the job, so one whose lower
        bound is `end` or later does not matter yet; often it never does. Why making one out of turn is exact:
        it is kept only if it ends before every lazy one ahead of it can begin, so it saw none of the moments they
        will take, and they will look at none of its own (their search starts at their lower bound); otherwise
        the first lazy one is made first. Starts and earlier reservations only touch moments before the `end` of
        the question asked before them, so they never reach a lazy one's moments either."""
        lazy = self._lazy
        if not lazy:
            self._lazy_floor = math.inf
            return
        timeline = self.timeline
        while lazy:
            k = next((i for i, item in enumerate(lazy) if item[2] < end), None)
            if k is None:
                break
            job, allowed, _ = lazy[k]
            slot = timeline.earliest(job.ipus, job.time_limit, allowed)
            if k and slot is not None and slot[0] + job.time_limit > min(item[2] for item in lazy[:k]):
                k, (job, allowed, _) = 0, lazy[0]  # it might overlap one ahead of it: make that one first
                slot = timeline.earliest(job.ipus, job.time_limit, allowed)
            del lazy[k]
            if slot is not None:
                self._reserve(job, slot[0], slot[1])
        self._lazy_floor = min((item[2] for item in lazy), default=math.inf)

    def nothing_can_start(self) -> bool:
        """True when no waiting job can start now: for each size still waiting, no block is free outside the
        reservations that begin before its shortest time limit ends, and, for each size still waiting in a QOS that
        may preempt, not even evicting every evictable job would free such a block."""
        if self.remaining is None or self.preemptors is None:
            return False
        return not self._fitting.any_fits(self)

    def evictable(self) -> int:
        """IPUs of running jobs that some QOS may evict (cached until the next start or eviction)."""
        if self._evictable is None:
            preemptable = {victim for name in self.preempt_qos for victim in self.r.qos[name].preempt}
            preempted = self._preempted
            self._evictable = blocks_mask([n for r in self.r.running if r.qos in preemptable and r.id not in preempted
                                           for n in (r.first_ipu, r.ipus)], self.total)
        return self._evictable

    # -- actions ------------------------------------------------------------------------------------------
    def start(self, job: QueuedJob, first: int, place_mask: int) -> None:
        size, end = job.ipus, self.now + job.time_limit
        # (its block is free: every caller found it in avail; an AND with ~blk costs ten times as much)
        self.avail ^= block(first, size)
        if self.racks is not None:
            self.racks.take(first, size)
        if self._timeline is not None:
            self._timeline.reserve(self.now, end, first, size)
        elif self._frozen is None:  # (once frozen the timeline is never built: see freeze())
            self._started.append((end, first, size))
        self.usage.add(job)
        self.plan.started(job, end)
        self.decision.starts.append(new_record(Start, (job.id, first, place_mask)))
        # (_no_fit and _no_victims stay: a start only takes IPUs, so what found no block still finds none; an
        # eviction, which frees some, clears _no_fit. Clearing them here made sjf's walk test every job anew after
        # each of hundreds of starts, each test a few operations on masks as wide as the Pod.)
        self._fitting.started(first, size)

    def place(self, mask: int, size: int) -> int | None:
        """best_fit(mask, total, size); on the free IPUs themselves of a large Pod, from the racks kept (rack_masks.py),
        once a walk has placed more than RACKS_AFTER jobs on them (building them costs about that many placements)."""
        if mask is self.avail and self._placed >= 0:
            if self.racks is None:
                self._placed += 1
                if self._placed <= RACKS_AFTER:
                    return best_fit(mask, self.total, size)
                self.racks = RackMasks(mask, self.total)
            return self.racks.place(size)
        return best_fit(mask, self.total, size)

    def try_preempt(self, job: QueuedJob, allowed: int) -> bool:
        return try_preempt(self, job, allowed)

    def wait(self, job: QueuedJob, allowed: int, reserve: bool, not_before: float | None = None) -> None:
        """`job` cannot start now. If some moment can hold it, it blocks the jobs behind it (reason Priority for
        them) and, with `reserve`, takes a reservation on the timeline; its estimated start is that moment."""
        info = WAIT[self.blocked]
        limited = self.plan.applies(job)
        if limited and not self.estimates and reserve and self.mode == "backfill":
            # Its reservation depends on the limit plan, which holds the reservations made in walk order: it is
            # made now, after every lazy one ahead of it, exactly as the walk with estimates makes it.
            self.need(math.inf)
        elif not self.estimates:
            # Nobody reads the estimate, so no timeline search is made for it here. In backfill mode the
            # reservation is made once a job behind needs it (need()); in strict mode the walk stops here.
            if self.capacity.ever(job.ipus, allowed):
                self.blocked = True
                if reserve and self.mode == "backfill":
                    lb = self.timeline.first_time(job.ipus, allowed)
                    self._lazy.append((job, allowed, lb))
                    if lb < self._lazy_floor:
                        self._lazy_floor = lb
                    if lb < self._fitting.until:
                        self._fitting.drop()  # it may reserve IPUs that answer counted as free
            self.decision.pending[job.id] = info
            return
        slot = self._slot(job, allowed, not_before) if limited else \
            self.timeline.earliest(job.ipus, job.time_limit, allowed, not_before)
        if slot is None:
            self.decision.pending[job.id] = info
            return
        at, first, _ = slot
        if reserve:
            self._reserve(job, at, first)
            if limited:
                self.plan.reserve(job, at, at + job.time_limit)
        self.blocked = True
        self.decision.pending[job.id] = PendingInfo(info.reason, at)
        self.decision.expected_first_ipu[job.id] = first

    def _takes_reserved_limit(self, job: QueuedJob, end: float) -> bool:
        """Would running `job` from now until `end` take room in a limited group (array %N, QOS limit) that a job
        reserved earlier in this walk needs?"""
        return self.plan.touches_reservation(job) and self.plan.clash(job, self.now, end) is not None

    def _slot(self, job: QueuedJob, allowed: int, not_before: float | None) -> tuple[float, int, int] | None:
        """The earliest slot that also keeps the job's limited groups (array %N, QOS limits) within their limits,
        counting running jobs and the reservations made so far (the only moments at which a limit frees up are
        the ends of those, so trying each in turn finds the first)."""
        at = not_before
        while True:
            slot = self.timeline.earliest(job.ipus, job.time_limit, allowed, at)
            if slot is None:
                return None
            retry = self.plan.clash(job, slot[0], slot[0] + job.time_limit)
            if retry is None:
                return slot
            if retry == math.inf:
                return None
            at = retry

    def _reserve(self, job: QueuedJob, at: float, first: int) -> None:
        self.timeline.reserve(at, at + job.time_limit, first, job.ipus)
        self.reservations.append((at, block(first, job.ipus)))
        self.last_reserved = at
        self._fitting.drop()

    # -- the two paths ------------------------------------------------------------------------------------
    def planned(self, job: QueuedJob, allowed: int) -> None:
        """One of the first max_job_test jobs: start it, or plan it on the timeline and estimate its start."""
        if self.mode == "strict" and self.blocked:
            return self.wait(job, allowed, reserve=True, not_before=self.last_reserved)
        size, total = job.ipus, self.total
        # Fits now and keeps clear of every reservation made so far: the timeline's earliest slot would be `now`,
        # on this very mask (the timeline's masks from now to the job's end, ANDed, are exactly this).
        mask = self.avail if allowed is self.full else self.avail & allowed
        fits = has_block(mask, size, total)
        if fits and (self.reservations or self._lazy):
            mask = self.unreserved(mask, self.now + job.time_limit)
            fits = has_block(mask, size, total)
        if fits and self._takes_reserved_limit(job, self.now + job.time_limit):
            return self.wait(job, allowed, reserve=True)  # it would take a limit a reserved job of its group needs
        if fits:
            return self.start(job, self.place(mask, size), mask)  # type: ignore[arg-type]
        if self.try_preempt(job, allowed):
            return None
        self.wait(job, allowed, reserve=True)

    def fit_key(self, job: QueuedJob, allowed: int) -> int | tuple[int, int, int]:
        """What decides whether `job` finds a block in the tail: its size, its allowed IPUs and the reservations
        that begin before it would end (the walk remembers the keys that found none: _no_fit)."""
        horizon = bisect_left(self._frozen[0], self.now + job.time_limit) if self._frozen else 0
        if allowed is self.full:  # (an int, not a tuple: one made for each of 10,000 jobs woke the collector)
            return horizon << 32 | job.ipus
        # Why id(): hashing a mask of 65,536 IPUs reads all of it, for every job walked; the allowed masks are the
        # request's own, alive and unchanged through the walk, so equal ids mean equal masks.
        return (job.ipus, id(allowed), horizon)

    def tail(self, job: QueuedJob, allowed: int, key: int | tuple[int, int, int]) -> None:
        """Beyond max_job_test: start it if it fits now without touching a reservation; no estimate otherwise.
        `key`: fit_key(job, allowed)."""
        end = self.now + job.time_limit
        if key not in self._no_fit:
            mask = self.unreserved(self.avail if allowed is self.full else self.avail & allowed, end)
            first = self.place(mask, job.ipus)  # None: no block
            if first is not None:
                if not (self.plan.reserved and self._takes_reserved_limit(job, end)):
                    return self.start(job, first, mask)
            else:
                self._no_fit.add(key)
        if job.qos in self.preempt_qos and self.try_preempt(job, allowed):
            return
        self.decision.pending[job.id] = WAIT[self.blocked]
        # Only a job that some future moment can hold blocks the jobs behind it (matters in strict mode).
        if not self.blocked:
            self.blocked = self.capacity.ever(job.ipus, allowed)

    def run(self, order: Iterable[QueuedJob]) -> ScheduleDecision:
        return walk_order(self, order)

def run(request: ScheduleRequest, order: Iterable[QueuedJob], mode: Mode,
        ascending_limits: bool = False) -> ScheduleDecision:
    """Walk `order` (the policy's queue order) over the request's snapshot in `mode`; `ascending_limits`: the order
    comes by time limit, shortest first (sjf), which lets the walk stop sooner (the starts are the same)."""
    return _Walk(request, mode, ascending_limits).run(order)
