"""after:ID+MINUTES (a delay after the start, on the scheduler's clock) and aftercorr:ID (task T after task T), as
sbatch --dependency and slurmctld's test_job_dependency read them; every time here is virtual: no sleeps."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.control.driver import Driver, Timers
from vipu.control.realtime import RealtimeLoop
from vipu.errors import InvalidArgument
from vipu.scheduler.dependency_reads import FORGOTTEN
from vipu.scheduler.deps import Reads, evaluate, parse_dependency
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState

from tests.scheduler.builders import make, sleep, spec

S = JobState
HOLD = {"kind": "hold"}


def shown(s, job_id):
    job = s.view().job(job_id)
    return job.state, job.reason, job.estimated_start, job.unmet_dependency


def test_parse_after_with_a_delay():
    dep = parse_dependency("after:12+5:13,afterok:14")
    assert [(c.kind, c.ids, c.delays) for c in dep.clauses] == [("after", (12, 13), (5, 0)), ("afterok", (14,), ())]
    assert parse_dependency("after:3_*+2").clauses[0].delays == (2,)
    assert parse_dependency("after:4") == parse_dependency("AFTER:4")  # no delay: the same as before


@pytest.mark.parametrize("text,words", [
    ("after:12+", "give the delay in whole minutes after the +, e.g. after:12+5"),
    ("after:12+x", "the delay 'x' is not a whole number of minutes; write e.g. after:12+5"),
    ("after:12+1.5", "the delay '1.5' is not a whole number of minutes"),
    ("after:12+0", "a delay must be at least 1 minute; write after:12 for none"),
    ("after:12+999999", "is more than a year; give at most 527040"),
    ("afterok:12+5", "only after takes a delay (+MINUTES); write after:12+5"),
    ("afterok:12+1", "write after:12+1 to start 1 minute after job 12 starts, or drop +1"),
    ("aftercorr:12_3", "name the array job (aftercorr:12), or use afterok:12_3"),
])
def test_malformed_forms_are_refused_naming_the_field_and_the_fix(text, words):
    s = make()
    s.submit(spec(array="0-3"), 0)
    with pytest.raises(InvalidArgument) as refused:
        s.submit(spec(dependency=text), 0)
    assert "dependency" in str(refused.value) and words in str(refused.value)
    assert s.table.next_id == 5  # nothing queued


def test_after_with_a_delay_waits_that_long_after_the_start_on_the_schedulers_clock():
    s = make()
    s.submit(spec(workload=HOLD, time_limit=3600), 0)  # job 1
    s.submit(spec(dependency="after:1+5"), 0)  # job 2: 300 s after job 1 starts
    assert shown(s, 2)[3] == "after:1+5(unfulfilled)"
    s.cycle(10)  # job 1 starts at 10
    assert s.job(1).start_time == 10 and s.gate(10) == 0
    assert shown(s, 2) == (S.PENDING, "Dependency", 310, "after:1+5(unfulfilled)")  # squeue --start: its end
    assert s.table.next_wake() == 310  # the driver wakes then
    s.cycle(309.5)
    assert shown(s, 2)[:2] == (S.PENDING, "Dependency")
    s.cycle(310)
    assert s.job(2).state is S.RUNNING and s.job(2).start_time == 310 and shown(s, 2)[3] == ""


def test_a_delay_counts_from_a_cancel_of_a_job_that_never_ran_and_from_each_task_of_an_array():
    s = make()
    s.submit(spec(workload=HOLD, time_limit=3600, hold=True), 0)  # job 1: held, never runs
    s.submit(spec(array="0-1", workload=HOLD, time_limit=3600), 0)  # jobs 2, 3: tasks 2_0, 2_1
    s.hold(3, 0, single=True)  # 2_1 starts only once released
    s.submit(spec(dependency="after:1+1"), 0)  # job 4
    s.submit(spec(dependency="after:2+2"), 0)  # job 5: both tasks, each 2 minutes after its start
    s.cycle(0)
    s.cancel([1], 30)
    s.cycle(30)
    assert shown(s, 4)[1:3] == ("Dependency", 90) and shown(s, 5)[1:4] == (
        "Dependency", None, "after:2_*+2(unfulfilled)")  # task 2_1 has not started: no time yet
    s.release(3, 100, single=True)
    s.cycle(100)  # 2_1 starts
    s.cycle(101)
    assert shown(s, 5)[1:3] == ("Dependency", 220)  # the later start decides
    s.cycle(219)
    assert s.job(4).state is S.RUNNING and s.job(4).start_time == 100 and s.job(5).state is S.PENDING
    s.cycle(220)
    assert s.job(5).state is S.RUNNING


def test_a_delay_counts_from_the_latest_run_of_a_requeued_job_and_waits_while_it_is_queued_again():
    """As slurmctld, which resets start_time on a requeue and holds after while the job is pending."""
    s = make()
    s.submit(spec(workload=HOLD, time_limit=3600), 0)  # job 1
    s.submit(spec(dependency="after:1+2"), 0)  # job 2
    s.cycle(10)  # job 1's first run
    s.requeue(1, 20, hold=True)
    s.cleaned(1, 20)
    s.cycle(20)
    assert shown(s, 1)[0] is S.PENDING and shown(s, 2)[1:3] == ("Dependency", None)  # not 130: no run now
    s.cycle(130)
    assert s.job(2).state is S.PENDING
    s.release(1, 200)
    s.cycle(200)  # job 1's second run
    assert shown(s, 2)[1:3] == ("Dependency", 320)
    s.cycle(319)
    assert s.job(2).state is S.PENDING
    s.cycle(320)
    assert s.job(2).start_time == 320


def test_any_of_delays_ends_at_the_first_and_all_of_waits_for_events_too():
    s = make()
    s.submit(spec(workload=HOLD, time_limit=3600), 0)  # job 1
    s.submit(spec(workload=HOLD, time_limit=3600), 0)  # job 2
    s.submit(spec(dependency="after:1+10?after:2+3"), 0)  # job 3
    s.submit(spec(dependency="after:1+1,afterok:2"), 0)  # job 4: the delay, and then job 2's end
    s.cycle(0)
    s.cycle(1)
    assert shown(s, 3)[1:] == ("Dependency", 180, "after:1+10(unfulfilled)?after:2+3(unfulfilled)")
    assert shown(s, 4)[1:] == ("Dependency", None, "after:1+1(unfulfilled),afterok:2(unfulfilled)")
    s.cycle(180)
    assert s.job(3).state is S.RUNNING
    assert shown(s, 4)[1:] == ("Dependency", None, "afterok:2(unfulfilled)")  # as of the last cycle's clock
    s.cancel([2], 200)
    s.cycle(200)
    assert shown(s, 4)[1:] == ("DependencyNeverSatisfied", None, "afterok:2(failed)")


def test_after_on_a_job_not_started_has_no_expected_start_until_that_job_starts():
    """squeue --start: after:ID[+MINUTES] on a pending ID is N/A, for ID may hold the IPUs the job needs (job 2 takes
    the whole Pod at 3600: 3600 + the delay would be a start that cannot happen); once ID runs, the delay's end."""
    s = make()
    s.submit(spec(ipus=16, workload=HOLD, time_limit=3600), 0)  # job 1: the whole Pod until 3600
    s.submit(spec(ipus=16, workload=HOLD, time_limit=3600), 0)  # job 2: expected at 3600, the whole Pod too
    s.submit(spec(dependency="after:2+2"), 0)  # job 3
    s.submit(spec(dependency="after:2"), 0)  # job 4
    s.submit(spec(dependency="afterok:2"), 0)  # job 5
    s.cycle(0)
    assert shown(s, 2)[1:3] == ("Resources", 3600)
    assert [shown(s, i)[1:3] for i in (3, 4, 5)] == [("Dependency", None)] * 3
    s.cancel([1], 100)
    s.cleaned(1, 100)
    s.cycle(100)  # job 2 starts
    assert s.job(2).state is S.RUNNING and shown(s, 3)[1:3] == ("Dependency", 220)


def test_the_driver_wakes_when_a_delay_ends_and_at_once_for_a_start_that_met_after():
    s = make()
    d = Driver(s, Timers())
    s.submit(spec(begin="now+100", workload=sleep(1000), time_limit=2000), 0)  # job 1 starts at 100
    s.submit(spec(dependency="after:1"), 0)  # job 2: as job 1 starts, not at job 1's end
    s.submit(spec(dependency="after:1+2"), 0)  # job 3: at 220
    d.step(0)
    d.run(until=5000)
    assert [s.job(i).start_time for i in (1, 2, 3)] == [100, 100, 220]


def test_the_live_loop_sleeps_until_the_delay_ends():
    """The wall-clock loop sleeps until the driver's next event: the end of the delay, with nothing else due."""
    s = make()
    d = Driver(s, Timers())
    s.submit(spec(workload=HOLD, time_limit=3600), 0)
    s.submit(spec(dependency="after:1+5"), 0)
    d.step(10)  # job 1 starts; the step's own gate sees the delay at once
    assert RealtimeLoop(d, lock=None, now=lambda: 10.0, metrics=None).wait_after(10.0) == 300


def test_test_only_puts_the_start_at_the_end_of_the_delay():
    s = make()
    s.submit(spec(workload=HOLD, time_limit=3600), 0)
    s.cycle(0)
    x = s.view().expected_start(parse_spec(spec(dependency="after:1+5")), 60, s.free_mask, None)
    assert (x.start, x.reason) == (300, "Dependency")
    x = s.view().expected_start(parse_spec(spec(dependency="after:1+5", begin="now+400")), 60, s.free_mask, None)
    assert (x.start, x.reason) == (460, "BeginTime")  # the later of the two, and BeginTime first, as the queue's
    x = s.view().expected_start(parse_spec(spec(dependency="afterok:1")), 60, s.free_mask, None)
    assert (x.start, x.reason) == (None, "Dependency")


def test_aftercorr_pairs_each_task_with_the_task_of_the_same_index():
    s = make()
    s.submit(spec(array="0-2", workload=HOLD, time_limit=3600), 0)  # jobs 1-3: tasks 1_0 .. 1_2
    s.submit(spec(array="0-3", dependency="aftercorr:1"), 0)  # jobs 4-7: tasks 4_0 .. 4_3
    s.cycle(0)
    assert {shown(s, i)[1:] for i in range(4, 8)} == {("Dependency", None, "aftercorr:1_*(unfulfilled)")}
    s.job_finished(1, 5)  # 1_0 completes: 4_0 may run, the others still wait
    s.job_finished(2, 5, exit_code=1)  # 1_1 fails: 4_1 never runs
    s.cycle(5)
    assert [s.job(i).state for i in range(4, 8)] == [S.RUNNING, S.PENDING, S.PENDING, S.PENDING]
    assert shown(s, 5)[1:] == ("DependencyNeverSatisfied", None, "aftercorr:1_*(failed)")
    # 4_3 has no task 3 to pair with: it waits for array 1 as a whole, as afterok:1, and one task failed
    assert shown(s, 6)[1] == "Dependency" and shown(s, 7)[1] == "DependencyNeverSatisfied"
    s.requeue(2, 6)  # a requeued peer turns "never" back into a wait, as for afterok
    s.cycle(6)
    assert shown(s, 5)[1] == "Dependency"


def test_aftercorr_without_a_pair_is_afterok_on_the_job_as_a_whole():
    """slurmctld: a job that is not an array task, or a target that is not an array job, has no corresponding task;
    the dependency is then the target's successful end (sbatch(1): "treated the same as afterok")."""
    s = make()
    s.submit(spec(array="0-1", workload=HOLD, time_limit=3600), 0)  # jobs 1, 2
    s.submit(spec(workload=HOLD, time_limit=3600), 0)  # job 3
    s.submit(spec(dependency="aftercorr:1"), 0)  # job 4: not an array: every task of 1
    s.submit(spec(array="0-1", dependency="aftercorr:3"), 0)  # jobs 5, 6: job 3 is not an array
    s.cycle(0)
    s.job_finished(1, 1)
    s.job_finished(3, 1)
    s.cycle(1)
    assert [s.job(i).state for i in (4, 5, 6)] == [S.PENDING, S.RUNNING, S.RUNNING]
    s.job_finished(2, 2)
    s.cycle(2)
    assert s.job(4).state is S.RUNNING


def test_a_task_that_ends_rechecks_only_the_task_paired_with_it(evaluations):
    s = make()
    s.submit(spec(array="0-99", workload=HOLD, time_limit=3600), 0)  # jobs 1-100 (16 run at once)
    s.submit(spec(array="0-99", dependency="aftercorr:1"), 0)  # jobs 101-200
    s.cycle(0)
    s.cycle(0.5)  # the starts of 1_0 .. 1_15 rechecked their peers
    evaluations.clear()
    s.job_finished(1, 1)
    s.cycle(1)
    assert evaluations == [101] and 101 not in s.table.gated  # not 100 evaluations: one


ENDS = st.lists(st.tuples(st.integers(0, 200), st.sampled_from([0, 0, 1])), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(1, 8), ENDS, st.integers(1, 3))
def test_no_paired_task_starts_before_its_peer_completed_nor_an_after_before_its_delay(n, m, ends, delay):
    """Array 1 (n tasks) ends task by task at random times with random exit codes; array B (m tasks, aftercorr:1)
    and a job after:1_0+delay wait on it, driven in virtual time. A task of B starts only once its peer completed
    (or, without a peer, once every task of 1 did) and never when that failed; the after job starts when its delay
    ends, to the second, though no event but the wake-up happens then."""
    s = make()
    d = Driver(s, Timers())
    s.submit(spec(array=f"0-{n - 1}", workload=HOLD, time_limit=10_000), 0)  # jobs 1..n
    b = [j.id for j in s.submit(spec(array=f"0-{m - 1}", workload=HOLD, time_limit=10_000,
                                     dependency="aftercorr:1"), 0)]
    [c] = s.submit(spec(dependency=f"after:1_0+{delay}"), 0)
    d.step(0)
    now = 0
    for dt, code in ends:
        running = sorted(i for i in range(1, n + 1) if s.job(i).state is S.RUNNING)
        if not running:
            break
        d.run(until=now + dt)
        now += dt
        d.ended(running[0], s.job(running[0]).start_time, now, code)
        d.step(now)
        for k, job_id in enumerate(b):
            task = s.job(job_id)
            peers = [s.job(1 + k)] if k < n else [s.job(i) for i in range(1, n + 1)]
            if task.start_time is not None:
                assert all(p.state is S.COMPLETED and p.end_time <= task.start_time for p in peers)
            elif any(p.state is S.FAILED for p in peers):
                assert task.reason == "DependencyNeverSatisfied"
            elif all(p.state is S.COMPLETED for p in peers):
                raise AssertionError(f"task {task.display_id} still waits, though its peers completed")
    d.run(until=now + 60 * delay + 1)
    assert s.job(c.id).start_time == 60 * delay


@pytest.mark.parametrize("text,status", [("after:5", "ok"), ("after:5+3", "ok"), ("afterany:5", "ok"),
                                         ("afterok:5", "never")])
def test_a_job_no_longer_known_counts_as_ended_long_ago(text, status):
    """Review: after on a forgotten job waited forever (no start time); it ended, so after is met, as on a cancel."""
    reads = Reads(lambda ref: [FORGOTTEN], lambda: True, lambda array: array, 100.0)
    assert evaluate(parse_dependency(text), reads).status == status
