"""sjf: shortest time limit first, starting anything that fits (greedy, no reservations).

Why keep it: the classic research baseline for job completion time (short jobs stop waiting behind long ones), at
the price of starving large or long jobs while short ones keep coming — replay shows both effects.
"""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "shortest"  # request.pending comes sorted by (time limit, submit time, id)


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    return engine.run(request, request.pending, "greedy")
