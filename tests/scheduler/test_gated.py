"""Held and dependency-blocked jobs stay out of the cycle's walk, yet keep their reasons and their place in squeue.

A cycle's cost must not grow with the number of jobs that may not run: they are kept in an index of their own, a
dependency is evaluated again only when a job it names (or, for singleton, a job of its name) changes state, and a
job joins the walk when it is released or its dependency is met.
"""

import pytest

from vipu.errors import FailedPrecondition
from vipu.scheduler.job_states import JobState

from tests.scheduler.builders import POD256, make, spec

S = JobState


def walked(s, now, **kw):
    """Run one cycle; return the ids its policy was given to walk."""
    seen = []
    policy = s.policy

    def spy(request):
        jobs = list(request.pending)
        seen.extend(j.id for j in jobs)
        request.pending = iter(jobs)
        return policy(request)

    s.policy = spy
    try:
        s.cycle(now, **kw)
    finally:
        s.policy = policy
    return seen


@pytest.mark.parametrize("policy", ["fifo", "priority", "backfill", "sjf"])
def test_held_and_blocked_jobs_are_not_walked(policy, evaluations):
    s = make(pod=POD256, policy=policy)
    blocker = s.submit(spec(ipus=256, time_limit=3600), 0)[0].id  # fills the Pod for an hour
    s.cycle(0)
    held = [j.id for j in s.submit(spec(hold=True, array="0-299"), 1)]
    waiting = [j.id for j in s.submit(spec(dependency=f"afterok:{blocker}", array="0-299"), 1)]
    ready = [j.id for j in s.submit(spec(ipus=4), 1) + s.submit(spec(ipus=8), 1)]
    assert sorted(walked(s, 2)) == ready
    assert len(evaluations) == len(waiting)  # each evaluated once, when it arrived
    evaluations.clear()
    for now in range(3, 8):  # nothing they read changes: not evaluated again, not walked
        assert sorted(walked(s, now)) == ready
    assert evaluations == []
    assert {s.job(i).reason for i in held} == {"JobHeldUser"}
    assert {s.job(i).reason for i in waiting} == {"Dependency"}
    assert {s.job(i).reason for i in ready} <= {"Resources", "Priority"}


def test_a_released_job_joins_the_walk_and_is_explained_only_once_a_cycle_saw_it():
    s = make(policy="fifo")
    s.submit(spec(ipus=16, time_limit=600), 0)
    s.cycle(0)
    s.submit(spec(hold=True), 1)
    assert walked(s, 1) == [] and s.job(2).reason == "JobHeldUser"
    s.release(2, 2)
    assert s.job(2).reason is None  # released after the last cycle: not considered yet
    assert walked(s, 3) == [2] and s.job(2).reason == "Resources"
    s.hold(2, 4)
    assert walked(s, 5) == [] and s.job(2).reason == "JobHeldUser"


def test_dependency_is_evaluated_again_only_when_its_target_changes(evaluations):
    s = make(policy="fifo")
    s.submit(spec(ipus=16), 0)  # 1
    s.submit(spec(ipus=16), 0)  # 2: waits behind 1
    s.submit(spec(dependency="afterok:1"), 0)  # 3
    s.submit(spec(dependency="afterany:2"), 0)  # 4
    s.cycle(0)  # 1 starts
    assert sorted(evaluations) == [3, 4]
    evaluations.clear()
    s.cycle(1)
    assert evaluations == [3]  # its target started
    evaluations.clear()
    s.cycle(2)
    assert evaluations == []
    s.job_finished(1, 10)  # 1 ends: only 3 reads it
    assert walked(s, 10) == [2, 3] and evaluations == [3]  # 3 is met and joins this very walk; 2 starts
    evaluations.clear()
    assert walked(s, 11) == [3] and evaluations == [4]  # 2 started: 4 looks again, still waiting
    assert s.job(4).reason == "Dependency"


def test_singleton_waiters_are_evaluated_when_a_job_of_their_name_changes(evaluations):
    s = make(policy="fifo")
    s.submit(spec(name="etl", user="ann", dependency="singleton"), 0)  # 1 runs
    s.submit(spec(name="etl", user="ann", dependency="singleton"), 0)  # 2 waits for 1
    s.cycle(0)
    evaluations.clear()
    s.submit(spec(name="other", user="ann"), 1)  # another name: 2 is not looked at again
    s.cycle(1)
    assert evaluations == []
    s.job_finished(1, 5)
    s.cycle(5)
    assert evaluations == [2] and s.job(2).state is S.RUNNING


def test_held_job_with_a_dependency_is_evaluated_once_released(evaluations):
    s = make(policy="fifo")
    s.submit(spec(ipus=16), 0)
    s.submit(spec(dependency="afterok:1", hold=True), 0)
    s.cycle(0)
    assert evaluations == [] and s.job(2).reason == "JobHeldUser"
    s.job_finished(1, 5)
    s.cycle(5)
    assert evaluations == [] and s.job(2).reason == "JobHeldUser"
    s.release(2, 6)
    assert [e.job_id for e in s.cycle(6)] == [2] and evaluations == [2]


def test_squeue_lists_gated_jobs_in_queue_order_and_held_ones_last():
    """squeue sorts pending jobs by priority, and a held job's is 0: after every other pending job."""
    s = make(policy="priority")
    s.submit(spec(ipus=16, time_limit=600), 0)
    s.cycle(0)
    s.submit(spec(nice=10), 1)  # 2
    s.submit(spec(nice=30, hold=True), 1)  # 3
    s.submit(spec(nice=20, dependency="afterok:1"), 1)  # 4
    s.submit(spec(nice=0, hold=True), 1)  # 5
    s.cycle(2)
    pending = [j.id for j in list(s.view().queue()) if j.state is S.PENDING]
    assert pending == [2, 4, 5, 3]  # by priority (nice), blocked ones in their place, then held ones
    assert [s.job(i).reason for i in pending] == ["Resources", "Dependency", "JobHeldUser", "JobHeldUser"]


def test_sprio_leaves_held_jobs_out_and_refuses_one_named():
    """priority_multifactor.c: "0 means the job is held", and such a job is not listed."""
    s = make(policy="priority")
    s.submit(spec(ipus=16, time_limit=600), 0)
    s.cycle(0)
    s.submit(spec(), 1)  # 2
    s.submit(spec(hold=True), 1)  # 3
    s.submit(spec(array="0-1", hold=True), 1)  # 4, 5
    s.release(5, 1, single=True)
    assert [r.job_id for r in s.view().priorities(2)] == [2, 5]
    assert [r.job_id for r in s.view().priorities(2, ids=[4])] == [5]
    with pytest.raises(FailedPrecondition, match=r"job 3 is held \(JobHeldUser\), so has priority 0.*vipu release 3"):
        s.view().priorities(2, ids=[3])


def test_cancelled_and_started_jobs_leave_every_index():
    s = make(policy="fifo")
    s.submit(spec(ipus=16), 0)
    s.submit(spec(dependency="afterok:1"), 0)
    s.submit(spec(dependency="singleton", name="x"), 0)
    s.submit(spec(hold=True), 0)
    s.cycle(0)
    s.cancel([2, 4], 1)
    s.job_finished(1, 2)
    s.cycle(2)
    s.cycle(3)
    t = s.table
    assert t.gated == set() and t.gate_info == {} and t.recheck == set()
    assert t.waiting_on == {} and t.singletons == {}
    assert sum(t.ready_sizes.values()) == len(t.ready_seq) == 0 and s.job(3).state is S.RUNNING
