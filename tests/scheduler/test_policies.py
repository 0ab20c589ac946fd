"""Policies as pure functions: a table of snapshots in, starts and reasons out (no Scheduler involved)."""

from dataclasses import dataclass, field

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.config import QosSpec, SchedulerConfig
from vipu.scheduler.policies import POLICIES, QUEUE_ORDER, get_policy
from vipu.scheduler.policies.base import PendingInfo, QueuedJob, RunningJob, ScheduleRequest

QOS = SchedulerConfig().qos
LIMITED = {**QOS, "capped": QosSpec(priority=50, max_jobs_per_user=1, max_ipus_per_user=8)}


def q(id, ipus, limit=100.0, submit=0.0, user="u", qos="normal", **kw):
    return QueuedJob(id, ipus, limit, submit, user, qos, **kw)


def r(id, ipus, first, end_by, start=0.0, user="u", qos="normal"):
    return RunningJob(id, ipus, first, start, end_by, user, qos)


def request(pending, running=(), total=16, now=0.0, avail=None, **kw):
    used = 0
    for job in running:
        used |= ((1 << job.ipus) - 1) << job.first_ipu
    full = (1 << total) - 1
    return ScheduleRequest(now=now, total_ipus=total, available_mask=full & ~used if avail is None else avail,
                           pending=pending, running=list(running), qos=kw.pop("qos", QOS), **kw)


@dataclass
class Case:
    name: str
    policy: str
    req: ScheduleRequest
    starts: list  # [(job id, first ipu)]
    reasons: dict = field(default_factory=dict)  # job id -> (reason, estimated start)


HALF_BUSY = [r(1, 8, 0, end_by=100)]
CASES = [
    Case("fifo: nothing overtakes the blocked head", "fifo",
         request([q(2, 16), q(3, 4)], HALF_BUSY), [], {2: ("Resources", 100), 3: ("Priority", 200)}),
    Case("priority: same, strict", "priority",
         request([q(2, 16), q(3, 4)], HALF_BUSY), [], {2: ("Resources", 100)}),
    Case("backfill: a job ending by the reservation starts now", "backfill",
         request([q(2, 16), q(3, 4, limit=100)], HALF_BUSY), [(3, 8)], {2: ("Resources", 100)}),
    Case("backfill: a job running past the reservation on its block waits", "backfill",
         request([q(2, 16), q(3, 4, limit=150)], HALF_BUSY), [], {2: ("Resources", 100), 3: ("Priority", 200)}),
    Case("backfill: a job off the reserved block may run past it", "backfill",
         request([q(2, 8), q(3, 4, limit=1000)], [r(1, 8, 0, end_by=100), r(4, 4, 8, end_by=1000)]),
         [(3, 12)], {2: ("Resources", 100)}),
    Case("sjf: the shortest first; what fits and delays no reservation starts", "sjf",
         request([q(3, 4, limit=10), q(2, 16, limit=500)], HALF_BUSY), [(3, 8)], {2: ("Resources", 100)}),
    Case("sjf: the shortest job in line is reserved; a longer one that would delay it waits", "sjf",
         request([q(2, 16, limit=50), q(3, 4, limit=150)], HALF_BUSY), [], {2: ("Resources", 100),
                                                                         3: ("Priority", 150)}),
    Case("array %N: the estimate of a task waits for a task ahead of it to end", "backfill",
         request([q(2, 1, array_job_id=2, array_limit=1), q(3, 1, array_job_id=2, array_limit=1)],
                 [r(1, 16, 0, end_by=100)]), [], {2: ("Resources", 100), 3: ("Priority", 200)}),
    Case("QOS user limit: estimates one wave at a time", "backfill",
         request([q(i, 1, qos="capped") for i in (2, 3, 4)], [r(1, 16, 0, end_by=100)], qos=LIMITED), [],
         {2: ("Resources", 100), 3: ("Priority", 200), 4: ("Priority", 300)}),
    Case("QOS user limit: a job that fits now but would exceed the limit at a reservation of its user waits",
         "backfill", request([q(2, 8, qos="capped"), q(3, 4, limit=1000, qos="capped")],
                             [r(1, 8, 0, end_by=100), r(4, 4, 8, end_by=1000)], qos=LIMITED),
         [], {2: ("Resources", 100), 3: ("Priority", 200)}),
    Case("allocation smaller than the job: PartitionNodeLimit, not ReqNodeNotAvail", "backfill",
         request([q(2, 16), q(3, 8)], allowed_masks={"default": 0xFF, "a": 0xFF00}), [(3, 0)],
         {2: ("PartitionNodeLimit", None)}),
    Case("a drained machine (in no allocation now) keeps the job from its block: ReqNodeNotAvail", "backfill",
         request([q(2, 8)], allowed_masks={"default": 0xF0, "a": 0xFF00}), [], {2: ("ReqNodeNotAvail", None)}),
    Case("fits: best fit keeps the big hole whole", "backfill",
         request([q(2, 4)], [r(1, 4, 0, end_by=50)]), [(2, 4)]),
    Case("limits: per-user job limit, other users run", "backfill",
         request([q(2, 2, qos="capped"), q(3, 2, qos="capped", user="v")], [r(1, 2, 0, 100, qos="capped")],
                 qos=LIMITED), [(3, 2)], {2: ("QOSMaxJobsPerUserLimit", None)}),
    Case("limits: per-user IPU limit", "fifo",
         request([q(2, 8, qos="capped", user="v"), q(3, 8, qos="capped", user="v")], qos=LIMITED),
         [(2, 0)], {3: ("QOSMaxJobsPerUserLimit", None)}),
    Case("array %N", "backfill",
         request([q(2, 1, array_job_id=1, array_limit=1), q(3, 1, array_job_id=1, array_limit=1)]),
         [(2, 0)], {3: ("JobArrayTaskLimit", None)}),
    Case("failed IPU: a whole-Pod job can never run and does not block", "fifo",
         request([q(2, 16), q(3, 4)], healthy_mask=0xFFFE, avail=0xFFFE), [(3, 4)], {2: ("ReqNodeNotAvail", None)}),
    Case("a job held back by a partition that never ends does not block", "fifo",
         request([q(2, 16), q(3, 4)], avail=0xFF00), [(3, 8)], {2: ("Resources", None)}),
    Case("allocation masks", "backfill",
         request([q(2, 4, allocation="a"), q(3, 4, allocation="zz"), q(4, 4)], allowed_masks={"a": 0xF0, "default": 0xF}),
         [(2, 4), (4, 0)], {3: ("ReqNodeNotAvail", None)}),
    Case("beyond max_job_test: start if it fits, no estimate", "backfill",
         request([q(2, 16), q(3, 16), q(4, 4, limit=50)], HALF_BUSY, max_job_test=1), [(4, 8)],
         {2: ("Resources", 100), 3: ("Priority", None)}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_policy(case):
    decision = get_policy(case.policy)(case.req)
    assert [(s.job_id, s.first_ipu) for s in decision.starts] == case.starts
    for job_id, (reason, estimate) in case.reasons.items():
        assert decision.pending[job_id] == PendingInfo(reason, estimate), job_id
    started = {s.job_id for s in decision.starts}
    for job in case.req.pending:
        assert (job.id in started) != (job.id in decision.pending or decision.rest is not None)


def test_walk_stops_early_when_nothing_can_start_and_explains_the_rest_lazily():
    pending = [q(i, 4, limit=100) for i in range(2, 1000)]
    full = [r(1, 16, 0, end_by=100)]
    req = request(iter(pending), full, sizes={4: len(pending)}, preemptors={}, estimates=False)
    decision = get_policy("backfill")(req)
    assert decision.starts == [] and len(decision.pending) == 1 and decision.rest == PendingInfo("Priority")
    assert decision.explain(pending[500]) == PendingInfo("Priority")
    assert decision.pending[2] == PendingInfo("Resources")  # estimates off: no timeline search for an estimate
    req = request(iter(pending), full, sizes={4: len(pending)}, preemptors={}, estimates=True, max_job_test=1)
    decision = get_policy("backfill")(req)
    assert decision.starts == [] and len(decision.pending) == 1 and decision.pending[2] == PendingInfo("Resources", 100)


def test_registry():
    assert set(POLICIES) == set(QUEUE_ORDER) == {"fifo", "priority", "backfill", "sjf"}
    with pytest.raises(InvalidArgument, match="use one of backfill, fifo, priority, sjf"):
        get_policy("lottery")
    with pytest.raises(Exception, match="policy 'lottery' is unknown"):
        SchedulerConfig(policy="lottery")
