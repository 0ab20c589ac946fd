"""Preemption inside the walk: which running jobs a waiting job's QOS may evict, and the walk's state after the
evictions (free IPUs, timeline, usage, limits). Why apart from engine.py: the walk's other steps never evict, and
the choice itself (preempt.py) is pure; this is where the choice meets the walk's caches."""

from __future__ import annotations

import math

from vipu.scheduler.bits import block
from vipu.scheduler.policies.base import Preemption, QueuedJob
from vipu.scheduler.policies.preempt import Victims, rank, room_of
from vipu.scheduler.policies.reservations import blocks_mask


def try_preempt(walk, job: QueuedJob, allowed: int) -> bool:
    """Start `job` by evicting running jobs its QOS may preempt, if some choice frees an aligned block for it
    without touching a reservation; False (remembered for this size, mask and QOS) if none does. `walk`: the
    engine's _Walk, whose free IPUs, timeline, usage and decision it changes."""
    if job.qos not in walk.preempt_qos:
        return False
    if walk._takes_reserved_limit(job, walk.now + job.time_limit):
        return False  # it would take a limit a reserved job of its group needs
    walk.need(math.inf)  # an eviction frees IPUs at every moment of the timeline: no reservation may wait
    reserved, reserved_key = walk.reserved(walk.now + job.time_limit)
    key = (job.ipus, id(allowed), reserved_key, job.qos)
    if key in walk._no_victims:
        return False
    found = walk._candidates.get(job.qos)
    if found is None:  # one pass over the running jobs per QOS, not per job: thousands run on a big Pod
        spec = walk.r.qos[job.qos]
        listed = [r for r in walk.r.running if r.qos in spec.preempt and r.id not in walk._preempted]
        found = walk._candidates[job.qos] = [listed, blocks_mask([n for r in listed for n in (r.first_ipu, r.ipus)],
                                                                 walk.total), None]
    # (the list keeps the candidates evicted since it was made: only their IPUs leave the mask, and Victims skips
    # them; filtering the list at every eviction read thousands of running jobs each time)
    candidates, their_ipus, ranked = found
    usable = allowed & walk.healthy & (walk.full ^ reserved)
    index = walk._victims.get((job.qos, job.ipus))
    if index is None:  # the candidates sorted once per walk and QOS, not looked at one by one per job
        if ranked is None:
            ranked = found[2] = rank(candidates, walk.now, walk.qos_sets.priority)
        index = walk._victims[(job.qos, job.ipus)] = Victims.from_ranked(ranked, job.ipus, walk.total, walk._preempted)
    # (usable stands for what the job may use: its allowed IPUs, healthy, less the reservations before its end)
    pick = index.choose(room_of(walk.avail & usable, their_ipus, usable, walk.total), (id(allowed), reserved_key)) \
        if their_ipus else None
    if pick is None:
        walk._no_victims.add(key)
        return False
    first, victims = pick
    for v in victims:
        walk.decision.preemptions.append(Preemption(v.id, job.id, walk.r.qos[v.qos].preempt_mode))
        blk = block(v.first_ipu, v.ipus) & walk.healthy
        walk.avail |= blk
        if walk.racks is not None:
            walk.racks.refresh(v.first_ipu, v.ipus, walk.avail)
        if walk._timeline is not None:
            walk._timeline.release_now(blk)
        walk._preempted[v.id] = v
        if walk._evictable is not None:  # (a victim's block is evictable, and no other job holds its IPUs)
            walk._evictable ^= block(v.first_ipu, v.ipus)
        walk._fitting.evicted(v.first_ipu, v.ipus)
        walk.usage.remove(v)
        walk.plan.evicted(v)
    # The victims' IPUs are free now: a size that found no free block may find one. A search for victims that
    # found none still finds none: what it may take, free or by evicting, is what it was less the new start.
    walk._no_fit.clear()
    for index in walk._victims.values():
        index.evicted(victims)
    for qos, found in walk._candidates.items():
        preempts = walk.r.qos[qos].preempt
        for v in victims:
            if v.qos in preempts:
                found[1] ^= block(v.first_ipu, v.ipus)
    walk.start(job, first, block(first, job.ipus))
    return True
