"""scontrol update job: each field on a pending job takes effect in scheduling; a running job's time limit only,
lowered by its owner, raised by an admin; the run then ends at its new limit."""

from __future__ import annotations

import pytest

from vipu.control.driver import Driver, Timers
from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, PermissionDenied
from vipu.scheduler.job_states import JobState as S
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.updates import JobUpdate

from tests.scheduler.builders import RecordingJournal, make, sleep, spec


def blocked() -> Scheduler:
    """Job 1 holds the whole Pod16 until 100; jobs 2 and 3 (4 IPUs each) wait behind it."""
    s = make()
    s.submit(spec(ipus=16, time_limit=100, workload={"kind": "hold"}), 0)
    s.cycle(0)
    s.submit(spec(ipus=4, time_limit=60), 1)
    s.submit(spec(ipus=4, time_limit=60), 2)
    s.cycle(3)
    return s


def pending_order(s: Scheduler) -> list[int]:
    return [x.id for x in s.view().queue() if x.state is S.PENDING]


def test_a_pending_jobs_fields_change_and_are_committed(journal):
    s = make(journal=journal)
    s.submit(spec(ipus=4, time_limit=60, hold=True), 0)
    [job] = s.update(1, JobUpdate(time_limit=1800, qos="high", nice=5, name="renamed"), 10)
    assert (job.name, job.spec.name, job.time_limit, job.spec.qos, job.spec.nice) == ("renamed", "renamed", 1800,
                                                                                        "high", 5)
    assert journal.records[("job", "1")] == job  # durable before it is known


def test_a_higher_qos_moves_a_job_ahead_and_a_nice_behind():
    s = blocked()
    assert pending_order(s) == [2, 3]
    s.update(3, JobUpdate(qos="high"), 4)
    assert pending_order(s) == [3, 2]
    s.update(3, JobUpdate(qos="normal", nice=5000), 5)
    assert pending_order(s) == [2, 3]


def test_an_admins_fixed_priority_orders_the_job_and_priority_0_holds_it():
    s = blocked()
    s.update(3, JobUpdate(priority=10**6), 4, admin=True)
    assert pending_order(s) == [3, 2]
    assert s.priority(3, 4).total == 10**6
    s.update(3, JobUpdate(priority=0), 5, admin=True)
    held = s.job(3)
    assert (held.held, held.admin_hold, held.fixed_priority, held.reason) == (True, True, None, "JobHeldAdmin")
    s.update(3, JobUpdate(priority=1), 6, admin=True)  # a priority releases the hold, as in Slurm
    assert not s.job(3).held and pending_order(s) == [2, 3]
    with pytest.raises(PermissionDenied, match="Priority: only an admin"):
        s.update(2, JobUpdate(priority=5), 7)


def test_a_dependency_set_or_removed_gates_the_job_afresh():
    s = blocked()
    s.update(3, JobUpdate(dependency="afterok:2"), 4)
    s.cycle(5)
    assert s.job(3).reason == "Dependency"
    s.update(3, JobUpdate(dependency=""), 6)
    s.cycle(7)
    assert s.job(3).reason == "Priority" and s.job(3).spec.dependency is None
    with pytest.raises(InvalidArgument, match="Dependency names job 3, queued after it"):
        s.update(2, JobUpdate(dependency="afterok:3"), 8)
    with pytest.raises(InvalidArgument, match="Dependency names itself"):
        s.update(3, JobUpdate(dependency="afterany:3"), 8)


def test_a_begin_time_keeps_the_job_out_until_then():
    s = blocked()
    s.update(2, JobUpdate(begin="now+1000"), 10)
    assert s.job(2).begin_time == 1010 and s.job(2).reason == "BeginTime"
    s.update(2, JobUpdate(begin="now"), 20)
    s.cycle(20)
    assert s.job(2).reason == "Priority" and pending_order(s) == [3, 2]  # eligible from 20 only: 3 is older


def test_a_new_name_moves_the_job_between_singleton_groups():
    s = make()
    s.submit(spec(name="a", hold=True), 0)
    s.submit(spec(name="c", dependency="singleton"), 1)
    s.update(1, JobUpdate(name="c"), 2)  # job 1 joins group c, ahead of job 2
    s.cycle(3)
    assert s.job(2).reason == "Dependency"
    s.update(1, JobUpdate(name="a"), 4)  # and leaves it again
    s.cycle(5)
    assert s.job(2).state is S.RUNNING


def test_an_arrays_throttle_limits_how_many_tasks_run():
    s = make()
    s.submit(spec(ipus=1, array="0-7%4", hold=True, workload={"kind": "hold"}), 0)
    s.update(1, JobUpdate(array_task_throttle=2), 1)
    s.release(1, 2)
    s.cycle(2)
    assert sum(s.job(i).state is S.RUNNING for i in range(1, 9)) == 2
    assert s.job(3).spec.array == "0-7%2"
    s.update(1, JobUpdate(array_task_throttle=0), 3)  # no limit: the pending tasks may all run
    s.cycle(3)
    assert all(s.job(i).state is S.RUNNING for i in range(1, 9))
    with pytest.raises(InvalidArgument, match="ArrayTaskThrottle: job 9 is not an array job"):
        s.submit(spec(), 4)
        s.update(9, JobUpdate(array_task_throttle=1), 4)


def test_a_running_job_takes_no_qos_and_a_time_limit_only_an_admin_raises():
    s = blocked()
    with pytest.raises(FailedPrecondition, match=r"job 1 is RUNNING: QOS can change only while it is pending"):
        s.update(1, JobUpdate(qos="high", time_limit=50), 10)
    # a bad value is told first, whatever the state (walk of issue 22: the state hid it)
    for bad, said in ((JobUpdate(begin="garbage"), "StartTime 'garbage'"), (JobUpdate(qos="nope"), "QOS 'nope'"),
                      (JobUpdate(nice=10**6), "Nice is 1000000"), (JobUpdate(dependency="whenever"), "Dependency")):
        with pytest.raises(InvalidArgument, match=said):
            s.update(1, bad, 10)
    with pytest.raises(PermissionDenied, match="only an admin may raise a running job's time limit"):
        s.update(1, JobUpdate(time_limit=200), 10)
    assert s.job(1).time_limit == 100
    s.update(1, JobUpdate(time_limit_add=-40), 10)
    assert s.job(1).time_limit == 60 and s.table.running[1].end_by == 60  # the reservations see it
    s.update(1, JobUpdate(time_limit=500), 10, admin=True)
    assert s.job(1).time_limit == 500


def test_a_running_jobs_name_and_nice_change_as_slurms_do():
    """job_mgr.c refuses Name and Nice only for a finished job; a running job's nice is kept, and orders nothing."""
    s = blocked()
    [job] = s.update(1, JobUpdate(name="big run 2", nice=5), 10)
    assert (job.state, job.name, job.spec.name, job.spec.nice) == (S.RUNNING, "big run 2", "big run 2", 5)
    assert s.table.running[1].end_by == 100 and s.job(1).start_time == 0
    assert s.table.active_by_name[("big run 2", job.user)] == {1}  # its singleton group follows the name


def test_a_lowered_limit_ends_the_run_timeout_at_it_and_a_raised_one_outlives_the_old_limit():
    s = make()
    s.submit(spec(time_limit=100, workload={"kind": "hold"}), 0)
    s.submit(spec(time_limit=100, workload=sleep(150)), 0)  # its sleep outlasts its limit: the limit ends it
    driver = Driver(s, Timers())
    driver.step(0)
    s.update(1, JobUpdate(time_limit=30), 10)
    driver.limit_changed(1, 10)
    s.update(2, JobUpdate(time_limit=200), 10, admin=True)
    driver.limit_changed(2, 10)
    driver.run()
    assert (s.job(1).state, s.job(1).end_time) == (S.TIMEOUT, 30)
    assert (s.job(2).state, s.job(2).end_time) == (S.COMPLETED, 150)  # its sleep ended, not the old limit


def test_a_limit_lowered_below_the_time_run_ends_the_job_at_once():
    s = make()
    s.submit(spec(time_limit=100, workload={"kind": "hold"}), 0)
    driver = Driver(s, Timers())
    driver.step(0)
    s.update(1, JobUpdate(time_limit=5), 50)
    driver.limit_changed(1, 50)
    # ended in that call, so the update's reply shows TIMEOUT, not a stale RUNNING (walk of issue 22)
    assert (s.job(1).state, s.job(1).end_time) == (S.TIMEOUT, 50)


def test_an_array_id_changes_its_tasks_not_ended_and_a_task_id_one_task():
    s = make()
    s.submit(spec(ipus=8, array="0-2", time_limit=100, workload={"kind": "hold"}), 0)
    s.cycle(0)  # tasks 0 and 1 run, 2 waits
    changed = s.update(1, JobUpdate(time_limit=50), 1)
    assert [j.time_limit for j in changed] == [50, 50, 50]
    with pytest.raises(FailedPrecondition, match="job 1_0 is RUNNING"):
        s.update(1, JobUpdate(qos="high"), 2, single=True)
    [task] = s.update(1, JobUpdate(qos="high"), 2)  # the array: its pending task
    assert (task.id, task.spec.qos) == (3, "high")


@pytest.mark.parametrize("update, words", [
    (JobUpdate(), "no field to update"),
    (JobUpdate(qos="gold"), "QOS 'gold' is unknown; use one of high, low, normal"),
    (JobUpdate(qos=""), "QOS is empty"),
    (JobUpdate(time_limit_add=-100), "leaves it no time"),
    (JobUpdate(name="a\nb"), r"Name 'a\\nb' contains the control character '\\n'"),
    (JobUpdate(name="x" * 1025), "Name is 1025 characters long; use at most 1024"),
    (JobUpdate(nice=20000), "Nice is 20000"),
    (JobUpdate(begin="tomorrowish"), "StartTime 'tomorrowish' is not a time"),
    (JobUpdate(dependency="afterok:99"), "job 99, queued after it"),
    (JobUpdate(dependency="after:x"), "Dependency"),
])
def test_bad_updates_name_the_field_and_change_nothing(update, words):
    s = blocked()
    before = s.job(3)
    with pytest.raises(InvalidArgument, match=words):
        s.update(3, update, 4)
    assert s.job(3) == before


def test_an_unlimited_limit_takes_no_increment_or_decrement_as_scontrol():
    s = make()
    s.submit(spec(time_limit=float("inf"), ipus=16), 0)  # runs
    s.submit(spec(time_limit=float("inf"), ipus=16), 0)  # waits
    for job, change in ((1, -600), (2, 1800)):
        before = s.job(job)
        with pytest.raises(InvalidArgument, match=rf"TimeLimit: job {job} is UNLIMITED, .*TimeLimit=60"):
            s.update(job, JobUpdate(time_limit_add=change), 1, admin=True)
        assert s.job(job) == before


def test_a_negative_nice_is_an_admins():
    s = blocked()
    with pytest.raises(PermissionDenied, match="Nice is -5: only an admin"):
        s.update(3, JobUpdate(nice=-5), 4)
    s.update(3, JobUpdate(nice=-5), 4, admin=True)


def test_an_ended_job_is_not_updated():
    s = blocked()
    s.cancel([3], 4)
    with pytest.raises(FailedPrecondition, match=r"job 3 already ended \(CANCELLED\)"):
        s.update(3, JobUpdate(nice=1), 5)


def test_a_retried_submit_is_still_known_after_its_job_was_updated():
    s = make(journal=RecordingJournal())
    [job] = s.submit(spec(hold=True), 0, request_id="r1")
    s.update(job.id, JobUpdate(time_limit=600), 1)
    assert [j.id for j in s.submit(spec(hold=True), 2, request_id="r1")] == [job.id]
    with pytest.raises(AlreadyExists):
        s.submit(spec(hold=True, ipus=2), 3, request_id="r1")


def test_updates_survive_a_restart():
    journal = RecordingJournal()
    s = make(journal=journal)
    s.submit(spec(hold=True), 0)
    s.update(1, JobUpdate(qos="low", name="kept", priority=7), 1, admin=True)
    again = make()
    stored = [(kind, type(record).model_validate_json(record.model_dump_json()))  # as the store keeps them
              for (kind, _), record in journal.records.items()]
    again.recover(stored, 2)
    job = again.job(1)
    assert (job.name, job.spec.qos, job.fixed_priority, job.held) == ("kept", "low", 7, False)


@pytest.mark.parametrize("update, field", [
    (JobUpdate(nice=100_000), "nice"), (JobUpdate(qos="nosuch"), "qos"), (JobUpdate(time_limit=10**9), "time_limit"),
    (JobUpdate(dependency="afterok:x"), "dependency"), (JobUpdate(array_task_throttle=1), "array_task_throttle"),
])
def test_a_refused_update_names_the_request_field_it_is_about(update, field):
    """Regression: UpdateJob's refusals carried no BadRequest field, so API clients could not tell which was wrong."""
    s = make()
    s.submit(spec(hold=True), 0)
    with pytest.raises(InvalidArgument) as e:
        s.update(1, update, 1)
    assert [f for f, _ in e.value.violations] == [field]
