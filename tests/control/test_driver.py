"""The one event loop: equal times in a fixed order, late events at their own time, failed starts, and runs that
end when only their workload can tell."""

import logging

from vipu.control.driver import Driver, StartFailed, Timers
from vipu.scheduler.job_states import JobState as S

from tests.scheduler.builders import make, sleep, spec


def test_a_workload_that_ends_at_its_time_limit_completed_and_one_a_second_later_timed_out():
    s = make()
    s.submit(spec(time_limit=60, workload=sleep(60)), 0)
    s.submit(spec(time_limit=60, workload=sleep(61)), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    driver.run()
    assert (s.job(1).state, s.job(1).end_time) == (S.COMPLETED, 60)
    assert (s.job(2).state, s.job(2).end_time) == (S.TIMEOUT, 60)


def test_events_due_long_ago_are_handled_at_their_own_time_and_in_order():
    """After a restart the loop's first step is late: each end is recorded when it was due, and the IPUs the first
    job freed went to the waiting job at the step, not before."""
    s = make()
    s.submit(spec(ipus=16, time_limit=100, workload=sleep(10)), 0)
    s.submit(spec(ipus=16, time_limit=20, workload=sleep(500)), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    driver.step(1000)
    assert (s.job(1).state, s.job(1).end_time) == (S.COMPLETED, 10)
    assert (s.job(2).state, s.job(2).start_time) == (S.RUNNING, 1000)
    driver.step(5000)
    assert (s.job(2).state, s.job(2).end_time) == (S.TIMEOUT, 1020)


class NoPartitions(Timers):
    def start(self, start):
        raise StartFailed("no partition today")


def test_a_start_that_fails_ends_the_job_node_fail_and_requeues_it():
    s = make()
    s.submit(spec(), 0)
    s.submit(spec(requeue=False), 0)
    Driver(s, NoPartitions()).step(0)
    assert s.job(1).state is S.PENDING and s.job(1).requeue_count == 1
    assert s.job(2).state is S.NODE_FAIL
    assert [t.state for t in s.job(1).history] == [S.PENDING, S.RUNNING, S.NODE_FAIL, S.PENDING]


def test_a_run_that_ends_after_its_time_limit_ran_out_timed_out():
    """A training thread reporting its end late does not turn a run the time limit ended into COMPLETED."""
    s = make()
    s.submit(spec(time_limit=60, workload={"kind": "hold"}), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    driver.ended(1, 0.0, 75.0, exit_code=0)
    assert (s.job(1).state, s.job(1).end_time) == (S.TIMEOUT, 60)


def test_a_run_that_ends_before_its_time_limit_completed_or_failed_by_its_exit_code():
    s = make()
    for _ in range(3):
        s.submit(spec(time_limit=60, workload={"kind": "hold"}), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    driver.ended(1, 0.0, 30.0, exit_code=0)
    driver.ended(3, 0.0, 31.0, exit_code=1, state=S.NODE_FAIL)
    driver.ended(2, 0.0, 60.0, exit_code=3)  # at its limit: its own end counts
    assert [(s.job(i).state, s.job(i).exit_code) for i in (1, 2)] == [(S.COMPLETED, 0), (S.FAILED, 3)]
    assert s.job(3).state is S.PENDING and s.job(3).requeue_count == 1  # NODE_FAIL, requeued


def requeued_at_5(executor):
    """A hold job started at 0, requeued at 5 under `executor`; the driver has stepped to 6."""
    s = make()
    s.submit(spec(time_limit=60, workload={"kind": "hold"}), 0)
    driver = Driver(s, executor)
    driver.step(0)
    driver.apply(s.requeue(1, 5), 5)
    driver.step(6)
    return s, driver


def test_an_end_reported_for_an_earlier_run_does_not_end_the_next():
    s, driver = requeued_at_5(Timers())
    assert s.job(1).start_time == 6
    driver.ended(1, 0.0, 7.0, exit_code=0)  # run 1's thread, late
    assert s.job(1).state is S.RUNNING


def test_a_run_torn_down_later_keeps_its_requeued_job_from_starting_until_the_teardown():
    """A program ends after its stop (KillWait) and keeps its partition till then: the job waits for it."""
    class Lingering(Timers):
        def stop(self, stop):
            super().stop(stop)
            return 30.0  # its KillWait

    s, driver = requeued_at_5(Lingering())
    assert (s.job(1).state, s.job(1).reason) == (S.PENDING, "Cleaning")
    s.cleaned(1, 7)
    driver.step(7)
    assert (s.job(1).state, s.job(1).start_time, s.job(1).requeue_count) == (S.RUNNING, 7, 1)


def test_a_preemptor_postponed_for_its_victims_teardown_is_logged_started_once_when_it_starts(caplog):
    """walk22d defect 4: the cycle's start, taken back by the driver, was logged as job_started while it waited."""
    from vipu.control.lifecycle import LifecycleLog
    from tests.scheduler.builders import RecordingJournal

    class Lingering(Timers):
        def stop(self, stop):
            super().stop(stop)
            return 30.0  # torn down later, at most KillWait later

    s = make(journal=LifecycleLog(RecordingJournal()))
    s.submit(spec(ipus=16, qos="low", time_limit=1000, workload={"kind": "hold"}), 0)
    driver = Driver(s, Lingering())
    with caplog.at_level(logging.INFO, logger="vipu.events"):
        driver.step(0)
        s.submit(spec(ipus=16, qos="high", workload={"kind": "hold"}), 1)
        driver.step(1)
        assert s.job(2).state is S.PENDING
        assert [r.fields["job_id"] for r in caplog.records if r.fields["event"] == "job_started"] == [1]
        s.cleaned(1, 3)
        driver.step(3)
    assert s.job(2).state is S.RUNNING
    assert [(r.fields["job_id"], r.fields["state"]) for r in caplog.records
            if r.fields["event"] in ("job_started", "job_requeued")] == [(1, "RUNNING"), (1, "PENDING"), (2, "RUNNING")]


def test_a_preemptions_victim_gets_a_cycle_at_the_same_time_for_its_reason_and_estimate():
    s = make()
    s.submit(spec(ipus=16, qos="low", time_limit=1000, workload=sleep(900)), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    s.submit(spec(ipus=16, qos="high", time_limit=100, workload=sleep(50)), 1)
    driver.step(1)
    assert (s.job(1).state, s.job(1).reason, driver.next_time()) == (S.PENDING, None, 1)
    assert driver.run(until=1) == 1
    assert (s.job(1).reason, s.job(1).estimated_start, driver.cycles) == ("Resources", 101, 3)
    assert driver.next_time() == 51  # the preemptor's end: no cycle more at 1


def test_a_start_that_fails_is_tried_again_at_the_next_event_not_at_once():
    s = make()
    s.submit(spec(), 0)
    driver = Driver(s, NoPartitions())
    driver.step(0)
    assert s.job(1).requeue_count == 1 and driver.next_time() is None  # a fault that lasts does not spin
