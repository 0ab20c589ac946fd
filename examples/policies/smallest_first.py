"""smallest_first: the fewest IPUs first (then the earliest submitted), with backfill's reservations."""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "submit"  # request.pending comes in submit order; this policy sorts it again


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    queue = sorted(request.pending, key=lambda job: (job.ipus, job.submit_time, job.id))
    return engine.run(request, queue, "backfill")
