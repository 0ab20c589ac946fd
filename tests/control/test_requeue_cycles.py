"""A job put back in the queue gets a cycle at once, with nothing else happening: the preemption's victim, a
NODE_FAIL requeue and `vipu requeue` each have their reason (and an estimated start) from the cycle that follows.
Stepped as the loop's thread steps (realtime.py): again while the driver has an event due."""

from __future__ import annotations

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.scheduler.job_states import JobState as S


def submit(plane, **fields) -> int:
    spec = {"ipus": 16, "time_limit": "10m", "workload": {"kind": "sleep", "duration": "5m"}, **fields}
    [done] = plane.jobs.submit([SubmitRequest(spec, {})], ANYONE)
    return done.jobs[0].id


def settle(plane) -> int:
    """Step as the loop does after a wake: until no event is due now. Returns the steps taken."""
    steps = 0
    while (due := plane.driver.next_time()) is not None and due <= plane.now():
        plane.step()
        steps += 1
    return steps


def shown(plane, job_id: int) -> tuple:
    job = plane.job_views.job(job_id, ANYONE)
    return job.state, job.reason, job.estimated_start


def test_a_preempted_job_has_its_reason_and_estimate_from_the_cycle_that_follows_at_once(plane):
    low = submit(plane, qos="low")
    plane.step()
    high = submit(plane, qos="high")
    plane.step()  # the submit's wake: this cycle preempts `low` (no KillWait: sleep stops at once) and starts `high`
    assert plane.job_views.job(high, ANYONE).state is S.RUNNING
    assert shown(plane, low) == (S.PENDING, None, None)  # requeued after the cycle that preempted it walked
    assert plane.loop.wait_after(plane.now()) == 0  # the live loop steps again at once, with nothing else happening
    assert settle(plane) == 1
    started = plane.job_views.job(high, ANYONE).start_time
    assert shown(plane, low) == (S.PENDING, "Resources", started + 600)  # when `high`'s time limit runs out
    assert plane.driver.next_time() > plane.now()  # and no more: the victim cannot preempt back


def test_a_job_requeued_by_a_node_failure_has_its_reason_from_the_cycle_that_follows(plane):
    job = submit(plane)
    plane.step()
    plane.admin.fail_ipus([0])
    assert plane.job_views.job(job, ANYONE).state is S.PENDING
    assert settle(plane) == 1
    assert shown(plane, job) == (S.PENDING, "ReqNodeNotAvail, UnavailableNodes:ag00", None)


def test_a_job_requeued_by_vipu_requeue_starts_again_at_the_cycle_that_follows(plane):
    job = submit(plane)
    plane.step()
    plane.jobs.requeue([job], False, ANYONE)
    assert plane.job_views.job(job, ANYONE).state is S.PENDING
    assert settle(plane) == 1
    again = plane.job_views.job(job, ANYONE)
    assert (again.state, again.requeue_count) == (S.RUNNING, 1)
