"""sacct's view of the scheduler: each job once as its latest run left it, every run with duplicates, by job id
(a job's runs in the order they ended), and the signal of a run the controller stopped."""

import json

from vipu.scheduler import stopped_ends
from vipu.scheduler.job_record import KINDS, EndedRun, Job
from vipu.scheduler.job_states import JobState
from vipu.store import Store

from tests.scheduler.builders import make, spec

S = JobState


def rows(s, **query):
    return [(j.id, j.state, j.start_time, j.end_time) for j in s.view().history(**query)]


def requeued_after_completing():
    """Job 1 completes at 2, is requeued and completes again at 7; job 2 completes at 5 in between."""
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    s.job_finished(1, 2)
    s.requeue(1, 3)
    s.submit(spec(), 3)
    s.cycle(4)
    s.job_finished(2, 5)
    s.job_finished(1, 7)
    return s


def test_a_requeued_job_is_one_row_by_default_and_a_row_per_run_with_duplicates():
    """Regression: -s CD listed job 48 twice (requeued after completing) where plain history listed it once."""
    s = requeued_after_completing()
    latest = [(1, S.COMPLETED, 4, 7), (2, S.COMPLETED, 4, 5)]
    assert rows(s, states=[S.COMPLETED]) == latest == rows(s, states=[S.COMPLETED, S.CANCELLED])
    every = [(1, S.COMPLETED, 0, 2), (1, S.COMPLETED, 4, 7), (2, S.COMPLETED, 4, 5)]
    assert rows(s, states=[S.COMPLETED], duplicates=True) == every
    earlier = s.view().history(states=[S.COMPLETED], duplicates=True)[0]
    assert (earlier.exit_code, earlier.signal) == (0, 0)  # a run that completed exited 0


def test_a_state_filter_matches_the_latest_run_unless_duplicates():
    """Regression: -s NODE_FAIL listed a requeued job's lost run while plain history showed its later cancel."""
    s = make()
    s.submit(spec(ipus=16, qos="low"), 0)
    s.cycle(0)
    s.submit(spec(ipus=16, qos="high"), 5)
    s.cycle(5)  # job 1 is preempted and requeued
    s.job_finished(2, 8)
    s.cycle(8)  # job 1 runs again
    s.cancel([1], 9)
    assert rows(s, states=[S.PREEMPTED]) == []
    assert rows(s, states=[S.PREEMPTED], duplicates=True) == [(1, S.PREEMPTED, 0, 5)]
    assert rows(s, states=[S.PREEMPTED, S.CANCELLED], duplicates=True) == [(1, S.PREEMPTED, 0, 5),
                                                                            (1, S.CANCELLED, 8, 9)]
    assert rows(s, states=[S.CANCELLED, S.COMPLETED]) == [(1, S.CANCELLED, 8, 9), (2, S.COMPLETED, 5, 8)]
    ended = s.view().history(states=[S.PREEMPTED, S.CANCELLED], duplicates=True)
    assert [j.signal for j in ended] == [15, 15]  # both runs were stopped by the controller
    assert stopped_ends.program_ended(s, 1, 0, 3, 0, 10)  # the preempted run's trap exited 3, told late
    assert [r[3] for r in ended_runs(s, 1)] == ["3:0", "0:15"]


def test_limit_keeps_the_most_recently_ended_not_the_highest_ids():
    """Regression: --limit 1 gave job 2 (the highest id) though job 1's requeued run ended after it."""
    s = requeued_after_completing()
    assert rows(s, states=[S.COMPLETED], limit=1) == [(1, S.COMPLETED, 4, 7)]
    assert rows(s, states=[S.COMPLETED], duplicates=True, limit=2) == [(1, S.COMPLETED, 4, 7), (2, S.COMPLETED, 4, 5)]
    assert rows(s, states=[S.COMPLETED], limit=5) == rows(s, states=[S.COMPLETED])


def test_rows_are_by_job_id_and_an_arrays_tasks_by_task_id_as_sacct_lists_them():
    """Regression (walk of issue 22): rows came in the order runs ended, so 5_1 before 5_0 and 17 before 16."""
    s = make()
    s.submit(spec(array="0-2"), 0)
    s.submit(spec(), 0)  # 4
    s.cancel([4], 1)
    s.cancel([3, 1, 2], 4)
    assert [j.display_id for j in s.view().history()] == ["1_0", "1_1", "1_2", "4"]


def test_the_signal_is_sigterm_only_for_a_run_the_controller_stopped():
    s = make()
    s.submit(spec(time_limit=5), 0)  # times out
    s.submit(spec(), 0)  # cancelled while it runs
    s.submit(spec(hold=True), 0)  # cancelled before it ran
    s.submit(spec(workload={"kind": "sleep", "duration": 1, "exit_code": 3}), 0)  # fails by itself
    s.cycle(0)
    s.job_finished(4, 1, exit_code=3)
    s.cancel([2, 3], 2)
    s.time_limit_reached(1, 0, 5)  # the driver's time-limit event
    signals = {j.id: (j.state, j.exit_code, j.signal) for j in s.view().history()}
    assert signals == {1: (S.TIMEOUT, None, 15), 2: (S.CANCELLED, None, 15), 3: (S.CANCELLED, None, 0),
                       4: (S.FAILED, 3, 0)}


def test_a_run_requeued_while_running_is_a_requeued_row_with_duplicates():
    """Regression: `vipu requeue` of a running job left that run out of -D (no ended state was recorded)."""
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    s.requeue(1, 3)  # stops the run at 3
    s.cycle(4)
    s.job_finished(1, 6)
    assert rows(s) == [(1, S.COMPLETED, 4, 6)]
    assert rows(s, duplicates=True) == [(1, S.REQUEUED, 0, 3), (1, S.COMPLETED, 4, 6)]
    assert rows(s, states=[S.REQUEUED], duplicates=True) == [(1, S.REQUEUED, 0, 3)]
    stopped = s.view().history(duplicates=True)[0]
    assert (stopped.exit_code, stopped.signal) == (None, 15)  # sacct's 0:15: the controller stopped it


def test_a_record_from_before_requeued_was_kept_still_shows_that_run():
    """A job stored by an earlier version went from RUNNING straight back to PENDING: that run is REQUEUED."""
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    s.requeue(1, 3)
    job = s.table.jobs[1]
    old = [t for t in job.history if t.state is not S.REQUEUED]  # as an earlier version stored it
    s.table.jobs[1] = job.updated({"history": old})
    assert rows(s, states=[S.REQUEUED], duplicates=True) == [(1, S.REQUEUED, 0, 3)]


def test_requeue_with_hold_waits_held_until_released():
    """scontrol requeuehold: the run ends REQUEUED and the job waits held (JobHeldUser), not started by a cycle."""
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    s.requeue(1, 3, hold=True)
    s.cycle(4)
    job = s.job(1)
    assert job.state is S.PENDING and job.held and not job.admin_hold and job.requeue_count == 1
    s.release(1, 5)
    s.cycle(5)
    assert s.job(1).state is S.RUNNING


def ended_runs(s, job_id: int | None = None) -> list[tuple]:
    """sacct -D's rows (of one job): (state, start, end, ExitCode as code:signal, first IPU)."""
    keep = None if job_id is None else (lambda j: j.id == job_id)
    return [(j.state, j.start_time, j.end_time, f"{j.exit_code or 0}:{j.signal}", j.first_ipu)
            for j in s.view().history(keep, duplicates=True)]


def requeued_program(journal=None):
    """Job 2 (4 IPUs, on 4-7 beside job 1) is requeued at 3, its program deaf to SIGTERM until the SIGKILL KillWait
    later (told at 5, the job back in the queue meanwhile); its second run, on IPUs 0-3 that job 1 left, exits 4."""
    s = make(journal=journal)
    s.submit(spec(ipus=4, workload={"kind": "hold"}), 0)
    s.submit(spec(ipus=4), 0)
    s.cycle(0)
    s.requeue(2, 3)
    assert stopped_ends.program_ended(s, 2, 0, 0, 9, 5)
    s.cancel([1], 5)
    s.cycle(6)
    s.job_finished(2, 9, exit_code=4)
    return s


def test_a_requeued_run_keeps_its_programs_end_and_its_ipus_and_the_last_run_its_own():
    s = requeued_program()
    assert ended_runs(s, 2) == [(S.REQUEUED, 0, 3, "0:9", 4), (S.FAILED, 6, 9, "4:0", 0)]
    first = s.view().history(states=[S.REQUEUED], duplicates=True)[0]
    assert (first.exit_code, first.exit_signal, first.signal, first.partition) == (0, 9, 9, s.job(2).partition)
    assert not stopped_ends.program_ended(s, 2, 0, 0, 15, 10)  # told once: the first end stays
    assert not stopped_ends.program_ended(s, 2, 6, 0, 15, 10)  # a run that ended by itself has its code


def test_a_requeued_run_not_told_its_end_shows_the_stop_and_a_lost_run_its_own():
    """Before its program's end is told, a requeued run shows the SIGTERM it was stopped with (0:15); a run failed
    IPUs ended (NODE_FAIL, requeued) shows where it ran, and once its program ended, how."""
    s = make()
    s.submit(spec(ipus=4), 0)
    s.cycle(0)
    s.requeue(1, 3)
    assert ended_runs(s) == [(S.REQUEUED, 0, 3, "0:15", 0), (S.PENDING, None, None, "0:0", None)]
    s.cycle(4)
    s.fail_ipus([1], 6)
    assert ended_runs(s)[1] == (S.NODE_FAIL, 4, 6, "0:0", 0)
    assert stopped_ends.program_ended(s, 1, 4, 0, 15, 7)
    assert ended_runs(s)[1] == (S.NODE_FAIL, 4, 6, "0:15", 0)
    s.repair_ipus([1])
    s.cycle(8)
    s.job_finished(1, 9, JobState.NODE_FAIL, exit_code=1)  # a training run's machine lost: 1:0
    s.cycle(10)
    assert [r[3] for r in ended_runs(s)] == ["0:15", "0:15", "1:0", "0:0"]


def test_a_record_stored_before_runs_were_kept_loads_and_shows_what_it_can():
    """Its history's items are pairs: a completed run exited 0, a requeued run was stopped (0:15), their IPUs
    unknown; a lost run it rests in takes its program's end as before, now on its transition too."""
    s = make()
    s.submit(spec(ipus=4, requeue=False), 0)
    s.cycle(0)
    s.fail_ipus([0], 10)
    doc = json.loads(s.table.jobs[1].model_dump_json())
    doc.update(requeue_count=2, history=[["PENDING", 0.0], ["RUNNING", 0.0], ["COMPLETED", 2.0], ["PENDING", 3.0],
                                         ["RUNNING", 4.0], ["REQUEUED", 6.0], ["PENDING", 6.0], ["RUNNING", 7.0],
                                         ["NODE_FAIL", 10.0]], start_time=7.0)
    old = Job.model_validate_json(json.dumps(doc))
    s.table.jobs[1] = old
    assert ended_runs(s) == [(S.COMPLETED, 0, 2, "0:0", None), (S.REQUEUED, 4, 6, "0:15", None),
                             (S.NODE_FAIL, 7, 10, "0:0", 0)]
    told = old.program_ended(7.0, 0, 9)
    assert (told.exit_code, told.exit_signal, told.history[-1]) == (0, 9, (S.NODE_FAIL, 10.0, EndedRun(0, 9, 0)))
    assert old.program_ended(4.0, 0, 9).history[5] == (S.REQUEUED, 6.0, EndedRun(0, 9, None))


def test_each_runs_end_is_kept_in_the_store_across_a_restart(tmp_path):
    store = Store(tmp_path / "state.db")
    before = ended_runs(requeued_program(store))
    store.close()
    reopened = Store(tmp_path / "state.db")
    s = make()
    s.recover(reopened.load(KINDS), now=20)
    assert ended_runs(s) == before
    assert [r[3] for r in before if r[0] in (S.REQUEUED, S.FAILED)] == ["0:9", "4:0"]
    reopened.close()
