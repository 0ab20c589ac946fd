"""sjf: shortest time limit first, with backfill's reservations (Slurm's sched/backfill over another order).

Why keep it: the classic research baseline for job completion time (short jobs stop waiting behind long ones). Why
it reserves: the first jobs in its order get reservations and jobs behind them start now only if they delay none,
as under backfill. Without them (its first, greedy version) a large job that was the shortest in line starved
while smaller, longer jobs kept filling the IPUs it waited for. Long jobs still wait while shorter ones keep
arriving ahead of them in the order, which is the price of the order itself.
"""

from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import ScheduleDecision, ScheduleRequest

ORDER = "shortest"  # request.pending comes sorted by (time limit, submit time, id)


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    return engine.run(request, request.pending, "backfill", ascending_limits=True)
