"""fifo: first come, first served, and nothing overtakes a job that waits (priority is ignored).

Why keep it: the baseline every other policy is measured against in trace replay, and the order users of a
plain queue expect.
"""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "submit"  # request.pending comes sorted by (submit time, id)


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    return engine.run(request, request.pending, "strict")
