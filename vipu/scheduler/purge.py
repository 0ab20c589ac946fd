"""Ended jobs leave memory after min_job_age (Slurm's MinJobAge) for the on-disk history that `vipu history` reads.

Why: a controller that keeps every job it ever ran grows without end; 400,000 stored jobs took 13.7 s to load and
2.5 GB of memory. A job moves in one commit that writes its history record and deletes its live one, so it is
always in exactly one of the two. Its fair-share usage moves into one sum per user (PurgedUsage), so a restart
charges the same usage without reading the history.

What stays longer: a job that a waiting dependency names, since its outcome decides that dependency (Slurm would
drop it and call the dependency met); and an array's tasks until every task may go, so an array id names all of
its tasks or none. A call moves at most PURGE_BATCH jobs, so the lock is held for a bounded time.

A move that the Journal refuses (Unavailable: the history cannot be written) changes nothing in memory: the jobs
stay, and the next call tries them again.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from vipu.errors import Unavailable
from vipu.scheduler.job_record import HISTORY_KIND, META_NAME, Job, PurgedUsage
from vipu.scheduler.job_states import TERMINAL

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

PURGE_BATCH = 10_000


def purge(s: Scheduler, now: float) -> list[Job]:
    """The jobs moved out of memory by this call (none when min_job_age is 0)."""
    age = s.config.min_job_age
    if age <= 0:
        return []
    table, cutoff = s.table, now - age
    heap, moving, named = table.ended, {}, []
    due = table.ended_named  # entries a waiting dependency kept last time: looked at again at every step
    table.ended_named = []
    while due or (heap and heap[0][0] <= cutoff and len(moving) < PURGE_BATCH):
        end, job_id = due.pop() if due else heapq.heappop(heap)
        job = table.jobs.get(job_id)
        if job is None or job.state not in TERMINAL or job.end_time != end or job_id in moving:
            continue  # stale: moved already, requeued, or ended again later (that entry counts)
        group = [job] if job.array_job_id is None else [table.jobs[i] for i in table.arrays[job.array_job_id]]
        if any(j.state not in TERMINAL or j.end_time is None or j.end_time > cutoff for j in group):
            continue  # an array goes with its last task to end: that task's own entry comes later
        if any(j.id in table.waiting_on for j in group) or job.array_job_id in table.waiting_on:
            named.append((end, job_id))  # a waiting dependency reads it: look again next time
            continue
        moving.update((j.id, j) for j in group)
    table.ended_named = named
    if not moving:
        return []
    jobs = sorted(moving.values(), key=lambda j: j.id)
    purged = s.purged.read_copy()
    for job in jobs:
        if job.start_time is not None and job.end_time is not None:
            purged.charge(job.user, job.ipus * max(0.0, job.end_time - job.start_time), job.end_time)
    if s._durable:
        puts = [(HISTORY_KIND, str(j.id), j) for j in jobs]
        puts.append(("purged_usage", META_NAME, PurgedUsage(usage=purged.usage())))
        try:
            s.journal.commit(puts, [("job", str(j.id)) for j in jobs])
        except Unavailable:
            for job in jobs:  # still in memory: due again at the next call
                heapq.heappush(heap, (job.end_time, job.id))
            raise
    s.purged = purged
    for job in jobs:
        table.forget(job)
    return jobs
