"""Preemption by QOS: a high job evicts the fewest, youngest low jobs that free a whole aligned block."""

import pytest

from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.job_states import JobState

from tests.scheduler.builders import check_gangs, make, spec

S = JobState
CANCEL_LOW = {"low": {"priority": 0, "preempt_mode": "cancel"}, "normal": {"priority": 50},
              "high": {"priority": 100, "preempt": ["low"]}}


def fill_with_low(s, times=(0, 0, 5, 5)):
    """Four 4-IPU low jobs filling a Pod16, started at `times`."""
    for t in sorted(set(times)):
        for _ in range(times.count(t)):
            s.submit(spec(ipus=4, qos="low", time_limit=1000), t)
        s.cycle(t)
    assert len(s.table.running) == 4


def test_high_evicts_the_youngest_block_and_requeues_it():
    s = make()
    fill_with_low(s)
    s.submit(spec(ipus=8, qos="high"), 10)
    effects = s.cycle(10)
    assert effects[:2] == [StopJob(3, "slurm_3", S.PREEMPTED, True, 8, 4), StopJob(4, "slurm_4", S.PREEMPTED, True, 12, 4)]
    (start,) = [e for e in effects if isinstance(e, StartJob)]
    assert (start.job_id, start.first_ipu) == (5, 8)
    for victim in (3, 4):
        job = s.job(victim)
        assert (job.state, job.requeue_count) == (S.PENDING, 1)
        assert [h.state for h in job.history][-3:] == [S.RUNNING, S.PREEMPTED, S.PENDING]
        assert job.preemption == "preempted by job 5 (qos high); requeued"  # said on the job itself
    assert s.job(1).state is S.RUNNING and s.job(2).state is S.RUNNING
    check_gangs(s)


@pytest.mark.parametrize("qos,requeue,want", [(CANCEL_LOW, True, S.PREEMPTED), (None, False, S.PREEMPTED)])
def test_cancel_mode_or_no_requeue_ends_the_victim(qos, requeue, want):
    s = make(**({"qos": qos} if qos else {}))
    for _ in range(4):
        s.submit(spec(ipus=4, qos="low", requeue=requeue), 0)
    s.cycle(0)
    s.submit(spec(ipus=4, qos="high"), 1)
    effects = s.cycle(1)
    (stop,) = [e for e in effects if isinstance(e, StopJob)]
    assert stop.requeued is False and s.job(stop.job_id).state is want and s.job(stop.job_id).end_time == 1
    why = "qos low has preempt_mode cancel" if qos else "its spec says requeue: false"
    assert s.job(stop.job_id).preemption == f"preempted by job 5 (qos high); cancelled: {why}"


def test_only_the_listed_qos_can_be_evicted_and_never_partially():
    s = make()
    s.submit(spec(ipus=8, qos="normal"), 0)
    s.submit(spec(ipus=4, qos="low"), 0)
    s.submit(spec(ipus=4, qos="normal"), 0)
    s.cycle(0)
    s.submit(spec(ipus=16, qos="high"), 1)
    assert s.cycle(1) == []  # the normal jobs cannot be evicted, so evicting the low one alone would not help
    assert s.job(2).state is S.RUNNING and s.job(4).reason == "Resources"


def test_free_ipus_plus_one_victim_make_the_block():
    s = make()
    s.submit(spec(ipus=8, qos="normal"), 0)
    s.submit(spec(ipus=4, qos="low"), 0)
    s.cycle(0)
    assert (s.job(1).first_ipu, s.job(2).first_ipu) == (0, 8)
    s.submit(spec(ipus=8, qos="high"), 1)
    effects = s.cycle(1)
    assert [type(e).__name__ for e in effects] == ["StopJob", "StartJob"]
    assert s.job(3).first_ipu == 8 and s.job(2).state is S.PENDING


def test_no_preemption_when_it_fits_anyway():
    s = make()
    s.submit(spec(ipus=4, qos="low"), 0)
    s.cycle(0)
    s.submit(spec(ipus=4, qos="high"), 1)
    assert [type(e).__name__ for e in s.cycle(1)] == ["StartJob"]


class Lingering:
    """An executor whose stops go on (a program given its grace to end): each stopped job keeps its IPUs until the
    test says its teardown is done (Scheduler.cleaned)."""

    def __init__(self):
        self.started: list[tuple[int, float, int]] = []

    def start(self, start):
        self.started.append((start.job_id, start.start_time, start.first_ipu))

    def stop(self, stop):
        return 30.0  # its KillWait


def preempted_while_lingering():
    """A low job on the whole Pod16 at 0; at 1 a high job for the whole Pod and a low 4-IPU job arrive; the low
    job's stop goes on."""
    from vipu.control.driver import Driver

    s = make()
    s.submit(spec(ipus=16, qos="low", time_limit=1000, workload={"kind": "hold"}), 0)
    executor = Lingering()
    driver = Driver(s, executor)
    driver.step(0)
    s.submit(spec(ipus=16, qos="high", workload={"kind": "hold"}), 1)
    s.submit(spec(ipus=4, qos="low", workload={"kind": "hold"}), 1)
    driver.step(1)
    return s, driver, executor


def test_a_preemptor_waits_for_its_victims_teardown_and_then_starts_on_their_ipus():
    s, driver, executor = preempted_while_lingering()
    assert (s.job(2).state, s.job(2).reason) == (S.PENDING, "Resources")  # not started on IPUs still held
    assert [h.state for h in s.job(2).history] == [S.PENDING]
    assert s.job(1).state is S.PENDING and s.job(1).reason == "Cleaning"  # requeued, its run still ending
    assert s.free_mask == 0  # the victim's IPUs stay busy, kept for the preemptor
    assert s.view().job(2).reason == "Resources"  # listings read a copy: it keeps the claim too
    driver.step(2)
    assert s.job(3).state is S.PENDING and executor.started == [(1, 0, 0)]  # nothing slipped onto them
    s.cleaned(1, 3)
    driver.step(3)
    assert (s.job(2).state, s.job(2).start_time, s.job(2).first_ipu) == (S.RUNNING, 3, 0)
    assert [h.state for h in s.job(2).history] == [S.PENDING, S.RUNNING]
    assert executor.started == [(1, 0, 0), (2, 3, 0)]
    assert s.job(3).state is S.PENDING and s.table.claimed_mask == 0
    check_gangs(s)


def test_a_waiting_preemptor_expects_to_start_when_its_victims_killwait_ends():
    """newcomer walk: while the preempted job's program was given KillWait, the preemptor showed EstimatedStart
    Unknown, though a job waiting on a cancelled run's IPUs is given the end of its KillWait."""
    s, driver, executor = preempted_while_lingering()
    assert (s.job(2).reason, s.job(2).estimated_start) == ("Resources", 1 + 30.0)
    driver.step(2)
    assert (s.view().job(2).reason, s.view().job(2).estimated_start) == ("Resources", 1 + 30.0)
    assert (s.job(1).reason, s.job(1).estimated_start) == ("Cleaning", None)  # the victim, requeued


def test_a_preemptor_whose_victim_outlives_its_killwait_expects_to_start_now_not_at_a_past_time():
    """Regression: a victim still torn down past its KillWait (31) left the preemptor's estimated start at 31, a
    time already past, in `vipu show job` and the queue; it frees its IPUs at any moment now."""
    s, driver, executor = preempted_while_lingering()
    driver.step(40)  # KillWait ran out at 31; the victim's program is not reaped yet
    assert s.job(2).state is S.PENDING and 1 in s.table.cleaning
    assert (s.job(2, 40).reason, s.job(2, 40).estimated_start) == ("Resources", 40)
    assert (s.view().job(2, 45).reason, s.view().job(2, 45).estimated_start) == ("Resources", 45)
    [row] = [r for r in s.view().queue_rows(shown_at=50) if r.job.id == 2]
    assert (row.reason, row.estimated_start) == ("Resources", 50)  # listings: squeue --start, %S
    assert s.job(2, 20).estimated_start == 31  # within KillWait: its end
    assert s.job(2).estimated_start == 31  # no `now` given: as the last cycle left it
    s.cleaned(1, 41)
    driver.step(41)
    assert (s.job(2).state, s.job(2).start_time) == (S.RUNNING, 41)


def test_a_waiting_preemptor_cancelled_leaves_its_ipus_to_the_queue():
    s, driver, executor = preempted_while_lingering()
    driver.apply(s.cancel([2], 2), 2)
    s.cleaned(1, 3)
    driver.step(3)
    assert s.job(2).state is S.CANCELLED and s.table.claimed_mask == 0
    assert (s.job(1).state, s.job(1).start_time) == (S.RUNNING, 3)  # the requeued victim, first in line


def test_a_preemptor_starts_in_the_same_cycle_when_the_stops_are_immediate():
    from vipu.control.driver import Driver, Timers

    s = make()
    s.submit(spec(ipus=16, qos="low", time_limit=1000, workload={"kind": "hold"}), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    s.submit(spec(ipus=16, qos="high", workload={"kind": "hold"}), 1)
    driver.step(1)
    assert (s.job(2).state, s.job(2).start_time) == (S.RUNNING, 1) and not s.table.claims


def test_a_waiting_preemptor_held_or_whose_ipus_failed_gives_up_its_claim():
    s, driver, executor = preempted_while_lingering()
    s.hold(2, 2)
    s.cleaned(1, 3)
    driver.step(3)
    assert (s.job(2).state, s.job(2).reason) == (S.PENDING, "JobHeldUser") and not s.table.claims
    assert s.job(1).state is S.RUNNING  # the IPUs went back to the queue
    s, driver, executor = preempted_while_lingering()
    driver.apply(s.fail_ipus([15], 2), 2)
    s.cleaned(1, 3)
    driver.step(3)
    assert s.job(2).state is S.PENDING and not s.table.claims and s.table.claimed_mask == 0
    assert s.job(2).reason == "ReqNodeNotAvail"  # walked again: a whole Pod16 is not there any more
