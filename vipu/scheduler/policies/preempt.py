"""Deciding which running jobs a preempting job evicts (the doing is the Scheduler's).

Why search by aligned block rather than by freed IPU count: freeing enough IPUs in the wrong places still leaves no
block for the job (Kueue #5243). We look at every aligned block of the job's size that free IPUs plus evictable
jobs' IPUs could fill, and take the one that evicts the lowest-QOS, fewest jobs losing the least work; blocks are
buddies, so a victim either holds the whole block or lies wholly inside it, and the search costs a few
operations per evictable job.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from vipu.scheduler.policies.base import QueuedJob, RunningJob
from vipu.scheduler.policies.reservations import blocks_mask


def choose_victims(
    job: QueuedJob,
    candidates: Sequence[RunningJob],
    free: int,
    usable: int,
    total: int,
    now: float,
    qos_priority: Mapping[str, int],
    evictable: int | None = None,
) -> tuple[int, list[RunningJob]] | None:
    """(first_ipu, victims sorted by id) for `job`, or None if evicting cannot make room.

    `free`: IPUs free now that the job may take; `usable`: IPUs it may take at all once evicted (its allocation,
    healthy, outside reservations of higher-priority jobs); `evictable`: the candidates' IPUs, if the caller keeps
    them."""
    if not candidates:
        return None
    # Why by victim, not by IPU: on 65,536 IPUs a walk over every IPU and every free block cost 0.1 s a call.
    # Victims are aligned blocks, so a block of the job's size either lies inside one victim (that victim alone is
    # evicted) or holds whole victims; each candidate block is checked against the bytes of what may be taken.
    size = job.ipus
    if evictable is None:
        evictable = blocks_mask([n for r in candidates for n in (r.first_ipu, r.ipus)], total)
    room = ((free | evictable) & usable).to_bytes((total + 7) >> 3, "little")
    best_key, best = None, None
    inside: dict[int, list[RunningJob]] = {}  # block -> the candidates it holds whole
    for r in candidates:
        if r.ipus < size:
            inside.setdefault(r.first_ipu - r.first_ipu % size, []).append(r)
            continue
        for first in range(r.first_ipu, r.first_ipu + r.ipus, size):
            if _whole(room, first, size):
                key = (qos_priority.get(r.qos, 0), 1, r.ipus * max(0.0, now - r.start_time), first)
                if best_key is None or key < best_key:
                    best_key, best = key, (first, [r])
                break  # (the lowest of its blocks: the others only differ by a later first IPU)
    for first, held in inside.items():
        if first + size <= total and _whole(room, first, size):
            chosen = sorted(held, key=lambda r: r.id)
            key = (
                max(qos_priority.get(r.qos, 0) for r in chosen),
                len(chosen),
                sum(r.ipus * max(0.0, now - r.start_time) for r in chosen),
                first,
            )
            if best_key is None or key < best_key:
                best_key, best = key, (first, chosen)
    return best


def _whole(room: bytes, first: int, size: int) -> bool:
    """Is the block wholly in `room` (a mask as little-endian bytes)? Blocks of 8 or more are whole bytes."""
    if size >= 8:
        return room[first >> 3:(first + size) >> 3] == b"\xff" * (size >> 3)
    bits = (1 << size) - 1
    return (room[first >> 3] >> (first & 7)) & bits == bits
