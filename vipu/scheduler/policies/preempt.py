"""Deciding which running jobs a preempting job evicts (the doing is the Scheduler's).

Why search by aligned block rather than by freed IPU count: freeing enough IPUs in the wrong places still leaves no
block for the job (Kueue #5243). We look at every aligned block of the job's size that free IPUs plus evictable
jobs' IPUs could fill, and take the one that evicts the lowest-QOS, fewest jobs losing the least work; blocks are
buddies, so a victim either holds the whole block or lies wholly inside it, and the search costs O(Pod size).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from vipu.scheduler.bits import aligned_starts, block
from vipu.scheduler.policies.base import QueuedJob, RunningJob


def choose_victims(
    job: QueuedJob,
    candidates: Sequence[RunningJob],
    free: int,
    usable: int,
    total: int,
    now: float,
    qos_priority: Mapping[str, int],
) -> tuple[int, list[RunningJob]] | None:
    """(first_ipu, victims sorted by id) for `job`, or None if evicting cannot make room.

    `free`: IPUs free now that the job may take; `usable`: IPUs it may take at all once evicted (its allocation,
    healthy, outside reservations of higher-priority jobs)."""
    if not candidates:
        return None
    owner: list[RunningJob | None] = [None] * total
    evictable = 0
    for r in candidates:
        evictable |= block(r.first_ipu, r.ipus)
        for ipu in range(r.first_ipu, r.first_ipu + r.ipus):
            owner[ipu] = r
    size = job.ipus
    starts = aligned_starts((free | evictable) & usable, size, total)
    best_key, best = None, None
    while starts:
        first = (starts & -starts).bit_length() - 1
        starts &= starts - 1
        victims: dict[int, RunningJob] = {}
        for ipu in range(first, first + size):
            r = owner[ipu]
            if r is not None and r.id not in victims:
                victims[r.id] = r
        if not victims:
            continue  # wholly free: the caller would have started the job there without evicting anyone
        chosen = sorted(victims.values(), key=lambda r: r.id)
        key = (
            max(qos_priority.get(r.qos, 0) for r in chosen),
            len(chosen),
            sum(r.ipus * max(0.0, now - r.start_time) for r in chosen),
            first,
        )
        if best_key is None or key < best_key:
            best_key, best = key, (first, chosen)
    return best
