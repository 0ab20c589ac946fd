"""Dependencies (after, afterok, afternotok, afterany, singleton; ',' = AND, '?' = OR), arrays and the %N limit."""

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.deps import parse_dependency
from vipu.scheduler.job_states import JobState

from tests.scheduler.builders import make, sleep, spec

S = JobState


def run(s, job_id, now, exit_code=0):
    """Start everything that can start, then end `job_id` with `exit_code`."""
    s.cycle(now)
    assert s.job(job_id).state is S.RUNNING, s.job(job_id)
    s.job_finished(job_id, now + 1, exit_code=exit_code)
    s.cycle(now + 1)


@pytest.mark.parametrize(
    "kind,exit_code,want_state,want_reason",
    [
        ("afterok", 0, S.RUNNING, None),
        ("afterok", 1, S.PENDING, "DependencyNeverSatisfied"),
        ("afternotok", 1, S.RUNNING, None),
        ("afternotok", 0, S.PENDING, "DependencyNeverSatisfied"),
        ("afterany", 0, S.RUNNING, None),
        ("afterany", 1, S.RUNNING, None),
    ],
)
def test_dependency_kinds(kind, exit_code, want_state, want_reason):
    s = make()
    s.submit(spec(), 0)
    s.submit(spec(dependency=f"{kind}:1"), 0)
    s.cycle(0)
    assert s.job(2).reason == "Dependency"
    s.job_finished(1, 5, exit_code=exit_code)
    s.cycle(5)
    assert (s.job(2).state, s.job(2).reason) == (want_state, want_reason)


def test_after_waits_only_for_the_start():
    s = make()
    s.submit(spec(ipus=16), 0)
    s.submit(spec(ipus=16), 0)
    s.submit(spec(dependency="after:2"), 0)
    s.cycle(0)
    assert s.job(3).reason == "Dependency"
    s.job_finished(1, 10)
    s.cycle(10)  # job 2 starts in this cycle; dependencies are evaluated at the start of the next one
    s.cycle(11)
    assert s.job(2).state is S.RUNNING and s.job(3).reason == "Resources"


def test_and_or_and_never():
    s = make()
    for _ in range(3):
        s.submit(spec(), 0)
    s.submit(spec(dependency="afterok:1,afterok:2"), 0)  # 4: AND
    s.submit(spec(dependency="afterok:1?afterok:2"), 0)  # 5: OR
    s.submit(spec(dependency="afterok:1:2"), 0)  # 6: both ids
    s.cycle(0)
    s.job_finished(1, 1, exit_code=7)
    s.cycle(1)
    assert s.job(4).reason == "DependencyNeverSatisfied" and s.job(6).reason == "DependencyNeverSatisfied"
    assert s.job(5).reason == "Dependency"
    s.job_finished(2, 2)
    s.cycle(2)
    assert s.job(5).state is S.RUNNING


def test_requeued_target_turns_never_back_into_waiting():
    s = make()
    s.submit(spec(), 0)
    s.submit(spec(dependency="afterok:1"), 0)
    run(s, 1, 0, exit_code=1)
    assert s.job(2).reason == "DependencyNeverSatisfied"
    s.requeue(1, 3)
    s.cycle(3)
    assert s.job(2).reason == "Dependency"


def test_array_dependency_waits_for_every_task():
    s = make()
    s.submit(spec(array="0-1"), 0)
    s.submit(spec(dependency="afterok:1"), 0)  # 1 is the array job id: both tasks
    s.cycle(0)
    s.job_finished(1, 1)
    s.cycle(1)
    assert s.job(3).reason == "Dependency"
    s.job_finished(2, 2)
    s.cycle(2)
    assert s.job(3).state is S.RUNNING


def test_afternotok_on_an_array_waits_for_every_task_then_needs_one_that_did_not_complete():
    """As slurmctld tests an array: wait while any task is active, then met if any task did not complete.
    Regression: it was tested task by task, so one COMPLETED task made it DependencyNeverSatisfied."""
    s = make()
    s.submit(spec(array="0-2"), 0)  # jobs 1-3 are tasks 1_0 .. 1_2
    s.submit(spec(array="0-1"), 0)  # jobs 4-5 are tasks 4_0, 4_1
    s.submit(spec(dependency="afternotok:1"), 0)  # job 6
    s.submit(spec(dependency="afternotok:4"), 0)  # job 7
    s.cycle(0)
    s.job_finished(1, 1)  # 1_0 completes: 1_1 and 1_2 may still fail
    s.cancel([2], 1)  # 1_1 cancelled: not OK, but 1_2 is still running
    s.cycle(1)
    assert s.job(6).reason == "Dependency"
    s.job_finished(3, 2)  # 1_2 completes: every task ended, one of them not OK
    for task in (4, 5):
        s.job_finished(task, 2)  # every task of 4 completed
    s.cycle(2)
    assert s.job(6).state is S.RUNNING and s.job(7).reason == "DependencyNeverSatisfied"


def test_a_dependency_on_one_array_task_waits_for_that_task_only():
    """afterok:N_T, as sbatch takes it: N alone stands for every task, so one task had no way to be named."""
    s = make()
    s.submit(spec(array="3,5"), 0)  # job 1 is task 1_3, job 2 task 1_5
    s.submit(spec(dependency="afterok:1_5"), 0)
    s.submit(spec(dependency="afternotok:1_3"), 0)
    s.cycle(0)
    s.job_finished(1, 1)  # 1_3 succeeds: job 4 can never run, job 3 still waits for 1_5
    s.cycle(1)
    assert (s.job(3).reason, s.job(4).reason) == ("Dependency", "DependencyNeverSatisfied")
    s.job_finished(2, 2)
    s.cycle(2)
    assert s.job(3).state is S.RUNNING
    for bad, why in (("afterok:1_4", "array job 1 has no task 4"), ("afterok:3_0", "job 3 is not an array job"),
                     ("afterok:1_", "give one or more job ids"), ("afterok:9_1", "task 9_1, which does not exist")):
        with pytest.raises(InvalidArgument, match=why):
            s.submit(spec(dependency=bad), 3)


def test_singleton_runs_one_job_per_name_and_user_at_a_time():
    s = make()
    for user in ("ann", "ann", "bob"):
        s.submit(spec(name="etl", user=user, dependency="singleton"), 0)
    s.cycle(0)
    assert [s.job(i).state for i in (1, 2, 3)] == [S.RUNNING, S.PENDING, S.RUNNING]
    assert s.job(2).reason == "Dependency"
    s.job_finished(1, 5)
    s.cycle(5)
    assert s.job(2).state is S.RUNNING


def test_parse_dependency():
    dep = parse_dependency("afterok:1:2,afterany:3")
    assert not dep.any_of and dep.ids == {1, 2, 3} and [c.kind for c in dep.clauses] == ["afterok", "afterany"]
    dep = parse_dependency("afterok:7_2:8")
    assert dep.clauses[0].ids == ((7, 2), 8) and dep.ids == {7, 8} and dep.tasks == {(7, 2)}
    assert parse_dependency("afterok:1?afternotok:2").any_of
    old_form = parse_dependency("34:35_1,afterok:36")  # bare ids, Slurm's old form: afterany
    assert [(c.kind, c.ids) for c in old_form.clauses] == [("afterany", (34, (35, 1))), ("afterok", (36,))]


def test_array_task_limit():
    s = make()
    s.submit(spec(array="0-5%2", workload=sleep(10)), 0)
    s.cycle(0)
    states = [s.job(i).state for i in range(1, 7)]
    assert states.count(S.RUNNING) == 2
    assert {s.job(i).reason for i in range(3, 7)} == {"JobArrayTaskLimit"}
    s.job_finished(1, 10)
    s.cycle(10)
    assert [s.job(i).state for i in range(1, 7)].count(S.RUNNING) == 2 and s.job(3).state is S.RUNNING


def test_the_shown_dependency_drops_met_elements_as_squeue_does():
    """squeue %E and scontrol's Dependency= (slurmctld's _depend_list2str): one element per job named with its
    state, the met ones left out, none once it is met as a whole; an array job's id is shown N_*."""
    s = make()
    s.submit(spec(ipus=4), 0)  # job 1
    s.submit(spec(ipus=4), 0)  # job 2
    s.submit(spec(array="0-1", ipus=4), 0)  # jobs 3-4: tasks 3_0, 3_1
    s.submit(spec(dependency="afterok:1:2,afternotok:3"), 0)  # job 5
    s.submit(spec(dependency="afterok:1?afterok:2"), 0)  # job 6
    s.submit(spec(name="etl", dependency="singleton"), 0)  # job 7
    s.submit(spec(name="etl", dependency="singleton"), 0)  # job 8
    s.cycle(0)

    def shown():
        return [s.view().job(i).unmet_dependency for i in (5, 6, 8)]

    assert shown() == ["afterok:1(unfulfilled),afterok:2(unfulfilled),afternotok:3_*(unfulfilled)",
                       "afterok:1(unfulfilled)?afterok:2(unfulfilled)", "singleton(unfulfilled)"]
    s.job_finished(1, 1)
    s.job_finished(2, 1, exit_code=1)
    s.cycle(1)
    assert shown() == ["afterok:2(failed),afternotok:3_*(unfulfilled)", "", "singleton(unfulfilled)"]
    assert s.job(5).unmet_dependency == "afterok:2(failed),afternotok:3_*(unfulfilled)"  # the live queue's read
    assert s.view().job(6).state is S.RUNNING and s.view().job(1).unmet_dependency is None
    s.job_finished(7, 2)
    s.cycle(2)
    assert s.view().job(8).state is S.RUNNING and shown()[2] == ""
    assert parse_dependency("afterok:3_*") == parse_dependency("afterok:3")  # as shown, it reads back
