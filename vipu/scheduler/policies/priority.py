"""priority: strict multifactor-priority order without backfill (Slurm's sched/builtin).

Why keep it: it isolates what backfill adds — the same order, but idle IPUs stay idle while the top job waits.
"""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "priority"  # request.pending comes in multifactor priority order (vipu/scheduler/order.py)


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    return engine.run(request, request.pending, "strict")
