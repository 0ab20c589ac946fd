"""first_fit: every job that fits now starts, in submit order, on the buddy best fit of the free IPUs; no
reservations, so a large job waits while smaller ones behind it keep starting. Written against the API alone
(docs/traces.md, Your own policy); it honours no QOS or array limit, which engine.run would."""

from vipu.scheduler.bits import best_fit, block
from vipu.scheduler.policies.base import RESOURCES, PendingInfo, ScheduleDecision, ScheduleRequest, Start

ORDER = "submit"  # request.pending comes in submit order


def schedule(request: ScheduleRequest) -> ScheduleDecision:
    free = request.available_mask  # bit i set: IPU i is free and healthy
    decision = ScheduleDecision()
    for job in request.pending:
        first = best_fit(free, request.total_ipus, job.ipus)  # the block's first IPU, or None: no block is free
        if first is None:
            decision.pending[job.id] = PendingInfo(RESOURCES)  # the reason `vipu queue` shows
            continue
        decision.starts.append(Start(job.id, first, block(first, job.ipus)))
        free &= ~block(first, job.ipus)
    return decision
