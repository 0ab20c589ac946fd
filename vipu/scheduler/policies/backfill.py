"""backfill: priority order, and lower-priority jobs fill idle IPUs when that delays no reservation
(Slurm's sched/backfill, the default).

Why: strict order leaves IPUs idle while a large job waits for a block; backfill uses the time limits to start
small jobs that end before the block is needed, or that run on IPUs the reservation does not use. Every job among
the first max_job_test gets a reservation (conservative backfill), so none of them is delayed either.
"""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "priority"  # request.pending comes in multifactor priority order (vipu/scheduler/order.py)


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    return engine.run(request, request.pending, "backfill")
