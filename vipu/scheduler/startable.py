"""Pending jobs that could start now: what "the queue is stuck" is measured against (vipu_jobs_startable, and the
alert VipuQueueStuck in deploy/prometheus/vipu.rules.yml).

A job could start now when all of these hold:
  - it is eligible: not held, its begin time has come, its dependencies are met (it is in the cycle's walk);
  - nothing but the scheduler holds it back: the last cycle gave it no reason of its own (a higher-priority job
    ahead, a QOS or array limit, IPUs it needs failed or drained), only Resources, or it has not been considered yet;
  - a free aligned block of its size lies within the IPUs it may use now (its allocation's, or the Pod's).
Such a job starts at the next cycle, so one that stays startable says the cycles stopped, or stopped starting jobs.
A Pod that is merely busy has none: the job first in line waits for Resources and does not fit in the free IPUs,
and the jobs behind it wait for Priority.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.scheduler.bits import has_block
from vipu.scheduler.policies.base import RESOURCES
from vipu.scheduler.reasons import pending_reason

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


def startable(s: Scheduler, available_mask: int | None = None, allowed_masks: Mapping[str, int] | None = None) -> int:
    """How many pending jobs could start now. The masks are those a cycle takes (Scheduler.cycle): IPUs free and
    healthy now (None: Scheduler.free_mask), and allocation -> its IPUs (None: the Pod)."""
    table = s.table
    if available_mask is None:
        available_mask = s.free_mask
    fits: dict[tuple[str | None, int, int | None], bool] = {}  # (allocation, size, nodes) -> a free block is there
    count = 0
    for job_id in table.ready_seq:
        queued = table.pending[job_id]
        key = (queued.allocation, queued.ipus, queued.nodes)
        fit = fits.get(key)
        if fit is None:
            allowed = s.full_mask if allowed_masks is None else allowed_masks.get(
                queued.allocation or DEFAULT_ALLOCATION, 0)
            if queued.nodes is not None:  # its nodelist and exclude
                allowed &= queued.nodes
            fit = fits[key] = has_block(available_mask & allowed, queued.ipus, s.total)
        if fit:
            info = pending_reason(s, table.jobs[job_id])
            if info is None or info.reason == RESOURCES:
                count += 1
    return count
