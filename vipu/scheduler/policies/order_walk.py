"""The walk's loop over the queue (engine.py's _Walk): limits, feasibility, the first max_job_test jobs planned, the
rest tried in the tail, and the stop once nothing more can start.

Why the common case is written out here rather than asked of _Walk's methods: after a wave of time limits on a
large Pod, sjf's walk takes most of a queue of 10,000 jobs this way (jobs of sizes that find no block, which may not
evict, wait), and a method call per job and question cost a third of such a cycle.
"""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from typing import TYPE_CHECKING, Iterable

from vipu.scheduler.policies.base import PRIORITY, RESOURCES, PendingInfo, QueuedJob, ScheduleDecision

if TYPE_CHECKING:
    from vipu.scheduler.policies.engine import _Walk

FLOOR_STEP = 32  # jobs walked between two refreshes of the sizes that fit as sjf's time limits rise
WAIT = {True: PendingInfo(PRIORITY), False: PendingInfo(RESOURCES)}  # shared: most pending jobs get one of these
WAIT_BLOCKED = WAIT[True]
# the fields of a QueuedJob the loop reads, in one call: a named field costs about as much as this whole tuple, and
# the loop reads six for each of up to 10,000 jobs
_WALKED = itemgetter(*map(QueuedJob._fields.index, ("id", "ipus", "time_limit", "qos", "array_limit", "nodes")))


def walk_order(walk: _Walk, order: Iterable[QueuedJob]) -> ScheduleDecision:
    """Walk `order` (the policy's queue order) and return the walk's decision."""
    tested, limit = 0, walk.r.max_job_test
    pending = walk.decision.pending
    remaining, preemptors, preempt_qos = walk.remaining, walk.preemptors, walk.preempt_qos
    floor = walk.limit_floor
    fitting, capacity, usage, no_fit = walk._fitting, walk.capacity, walk.usage, walk._no_fit
    limited = walk.qos_sets.limited
    whole_pod = walk.r.allowed_masks is None
    strict = walk.mode == "strict"
    now, feasible = walk.now, {}  # feasible: capacity.feasible(size, walk.full) by size, for whole_pod
    walked = 0
    may_stop = tested >= limit or not walk.estimates  # (past the jobs that get estimates: it may stop)
    # fit_key()'s horizon for whole_pod, by time limit: after the first max_job_test jobs the reservations stay as
    # they are, and the limits come in runs (sjf's order is by limit)
    horizon_limit, horizon = None, 0
    for job in order:
        job_id, size, job_limit, qos, array_limit, nodes = _WALKED(job)
        if floor is not None and job_limit > floor:
            # Why: sjf's walk stopped only once no size fitted for the shortest limit of any job of that size,
            # so it walked most of a long queue; jobs still to come run at least this long, so a block free
            # only until a reservation begins sooner holds none of them. Worked out again at most once per
            # FLOOR_STEP jobs: with many distinct limits each rise would cost a pass over the sizes.
            floor = walk.limit_floor = job_limit
            if walked >= walk._refresh_at:
                fitting.drop()
                walk._refresh_at = walked + FLOOR_STEP
        walked += 1
        if remaining is not None:
            left = remaining[size] = remaining.get(size, 0) - 1
            if left <= 0:
                fitting.fresh = False  # the last job of its size: the answer may change
            if preemptors is not None and qos in preempt_qos:
                left = preemptors[size] = preemptors.get(size, 0) - 1
                if left <= 0:
                    fitting.fresh = False
        # (Usage.reason's own first test, made here: most jobs have no limit, and a call costs more than it)
        reason = usage.reason(job) if array_limit is not None or qos in limited else None
        if reason is not None:
            pending[job_id] = PendingInfo(reason)
        else:
            if whole_pod and nodes is None:
                allowed = walk.full
                ok = feasible.get(size)
                if ok is None:
                    ok = feasible[size] = capacity.feasible(size, allowed)
            else:
                allowed = walk.allowed(job)
                ok = allowed is not None and capacity.feasible(size, allowed)
            if not ok:
                pending[job_id] = capacity.infeasible(job, allowed)
            elif tested < limit:
                tested += 1
                walk.planned(job, allowed)
                if tested == limit:
                    walk.freeze()
                    may_stop = True
            else:
                if allowed is walk.full:  # fit_key(), inlined
                    if job_limit != horizon_limit:
                        frozen = walk._frozen
                        horizon_limit = job_limit
                        horizon = bisect_left(frozen[0], now + job_limit) << 32 if frozen else 0
                    key = horizon | size
                else:
                    key = walk.fit_key(job, allowed)
                if key in no_fit and qos not in preempt_qos:
                    # what tail() does for a job of a size that found no block and may not evict, made here:
                    # after a large Pod's waves most of a queue of 10,000 jobs comes this way
                    if walk.blocked:
                        pending[job_id] = WAIT_BLOCKED
                    else:
                        pending[job_id] = WAIT[False]
                        walk.blocked = capacity.ever(size, allowed)
                else:
                    walk.tail(job, allowed, key)
        # (fitting.fresh: no start, eviction or reservation and no size's last job since it last said that
        # something can start, so it still does)
        if may_stop and ((strict and walk.blocked) or (not fitting.fresh and walk.nothing_can_start())):
            walk.decision.rest = PendingInfo(PRIORITY if walk.blocked else RESOURCES)
            walk.decision.limits = walk.usage
            break
    return walk.decision
