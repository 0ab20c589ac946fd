"""The Scheduler's commands: submit, the cycle, ends, time limits, cancel, hold/release, requeue, failures."""

import pytest

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from vipu.partition.placement import place
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.job_states import JobState

from vipu.control.driver import Driver, Timers
from tests.scheduler.builders import POD16, make, sleep, spec

S = JobState


def starts(effects):
    return [e for e in effects if isinstance(e, StartJob)]


def stops(effects):
    return [e for e in effects if isinstance(e, StopJob)]


def test_submit_commits_jobs_and_the_id_counter_before_they_are_visible(journal):
    s = make(journal=journal)
    jobs = s.submit(spec(array="0-2"), now=1)
    assert [j.id for j in jobs] == [1, 2, 3] and [j.array_task_id for j in jobs] == [0, 1, 2]
    assert {j.array_job_id for j in jobs} == {1}
    (puts, deletes), = journal.commits
    assert [(k, n) for k, n, _ in puts] == [("job", "1"), ("job", "2"), ("job", "3"), ("scheduler_meta", "scheduler")]
    assert puts[-1][2].next_job_id == 4 and deletes == []


def test_a_failed_commit_leaves_nothing_visible(journal):
    s = make(journal=journal)
    journal.fail_next = True
    with pytest.raises(OSError):
        s.submit(spec(), now=0)
    assert s.table.jobs == {} and list(s.view().queue()) == [] and s.cycle(0) == []


def test_request_id_makes_submit_idempotent(journal):
    s = make(journal=journal)
    first = s.submit(spec(array="0-1"), now=0, request_id="req-1")
    again = s.submit(spec(array="0-1"), now=5, request_id="req-1")
    assert [j.id for j in again] == [j.id for j in first] and len(journal.commits) == 1
    with pytest.raises(AlreadyExists, match="different spec"):
        s.submit(spec(ipus=2), now=5, request_id="req-1")
    with pytest.raises(InvalidArgument, match="request_id"):
        s.submit(spec(), now=5, request_id="")
    assert s.submit(spec(), now=5, request_id="req-2")[0].id == 3


def test_cycle_starts_on_the_block_place_would_pick():
    s = make()
    s.submit(spec(ipus=4), 0)
    s.submit(spec(ipus=8), 0)
    effects = starts(s.cycle(0))
    assert len(effects) == 2
    for e in effects:
        assert place(e.place_mask, POD16.ipus, e.ipus) == e.first_ipu
        assert e.partition == f"slurm_{e.job_id}" and e.end_by == e.start_time + 60
    job = s.job(1)
    assert job.state is S.RUNNING and job.first_ipu is not None and job.reason is None



def test_a_started_job_keeps_the_priority_it_had_while_pending():
    """As Slurm's job_ptr->priority: squeue shows a running job's, and sacct an ended one's."""
    s = make()
    [job] = s.submit(spec(ipus=4), 0)
    pending = s.priority(job.id, 10).total
    s.cycle(10)
    started = s.job(job.id)
    assert started.state is S.RUNNING and started.priority.total == pending > 0
    # its user has run before (fair-share 0.5, shown while it waits): kept at the start, not reset to 1 because the
    # walk needed no fair-share for one user's queue (walk22d: %Q jumped by 500 at the start)
    s.job_finished(job.id, 100)
    [big] = s.submit(spec(ipus=16, time_limit=500), 100)
    s.cycle(100)
    [later] = s.submit(spec(ipus=4), 101)
    s.cycle(101)
    waiting = s.priority(later.id, 200)
    assert waiting.fairshare < s.config.weights.fairshare  # its user's usage shows
    s.job_finished(big.id, 200)
    s.cycle(200)
    assert s.job(later.id).state is S.RUNNING and s.job(later.id).priority == waiting

@pytest.mark.parametrize(
    "exit_code,state", [(0, S.COMPLETED), (3, S.FAILED)],
)
def test_job_finished(exit_code, state):
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    (stop,) = s.job_finished(1, 10, exit_code=exit_code)
    assert stop == StopJob(1, "slurm_1", state, False, 0, 1)
    job = s.job(1)
    assert (job.state, job.exit_code, job.start_time, job.end_time) == (state, exit_code, 0, 10)
    assert s.table.used_mask == 0
    with pytest.raises(FailedPrecondition, match="not running"):
        s.job_finished(1, 11)


def test_time_limit_ends_a_job_as_timeout():
    s = make()
    s.submit(spec(time_limit="1m", workload=sleep(3600)), 0)
    runs = Timers()
    driver = Driver(s, runs)
    driver.step(0)
    assert driver.next_time() == 60
    driver.step(59.9)
    assert s.job(1).state is S.RUNNING
    driver.step(75)  # late, as after a restart: the run ends at its limit all the same
    assert runs.stopped == {S.TIMEOUT: 1} and s.job(1).state is S.TIMEOUT and s.job(1).end_time == 60


def test_cancel_pending_running_and_arrays():
    s = make()
    s.submit(spec(ipus=16), 0)
    s.submit(spec(array="0-2"), 0)
    s.cycle(0)
    assert s.job(1).state is S.RUNNING
    effects = s.cancel([1], 5)
    assert effects == [StopJob(1, "slurm_1", S.CANCELLED, False, 0, 16)]
    assert s.cancel([2], 6) == []  # the array job id cancels every task
    assert [s.job(i).state for i in (1, 2, 3, 4)] == [S.CANCELLED] * 4
    with pytest.raises(FailedPrecondition, match="already ended"):
        s.cancel([1], 7)
    with pytest.raises(NotFound, match="job 99 does not exist"):
        s.cancel([99], 7)


def test_hold_and_release():
    s = make()
    s.submit(spec(hold=True), 0)
    s.submit(spec(), 0)
    s.cycle(0)
    assert s.job(1).state is S.PENDING and s.job(1).reason == "JobHeldUser" and s.job(2).state is S.RUNNING
    assert s.release(1, 1).held is False
    assert [e.job_id for e in starts(s.cycle(1))] == [1]
    with pytest.raises(FailedPrecondition, match="only a PENDING job can be held"):
        s.hold(1, 2)
    s.submit(spec(ipus=16), 2)
    assert s.hold(3, 2).reason == "JobHeldUser"


def test_requeue_keeps_the_id_and_counts():
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    (stop,) = s.requeue(1, 5)
    assert stop.requeued and stop.state is S.REQUEUED  # how the run ended, as sacct -D shows it
    job = s.job(1)
    assert (job.state, job.requeue_count, job.start_time, job.first_ipu) == (S.PENDING, 1, None, None)
    s.cycle(6)
    s.job_finished(1, 7, exit_code=1)
    assert s.requeue(1, 8) == [] and s.job(1).requeue_count == 2
    with pytest.raises(FailedPrecondition, match="already PENDING"):
        s.requeue(1, 9)
    s.cancel([1], 9)
    with pytest.raises(FailedPrecondition, match="cannot be requeued"):
        s.requeue(1, 10)
    assert [h.state for h in s.job(1).history] == [
        S.PENDING, S.RUNNING, S.REQUEUED, S.PENDING, S.RUNNING, S.FAILED, S.PENDING, S.CANCELLED]


def test_a_requeued_job_whose_last_run_is_still_cleaning_up_waits_with_reason_cleaning():
    """Slurm keeps a requeued job COMPLETING (reason Cleaning) until its nodes are clean: no second start before."""
    s = make()
    s.submit(spec(), 0)
    s.cycle(0)
    s.requeue(1, 5)
    s.cleaning(1, 5)
    assert s.cycle(6) == [] and s.job(1).reason == "Cleaning"
    s.cleaned(1, 7)
    (start,) = s.cycle(7)
    assert start.job_id == 1 and s.job(1).requeue_count == 1
    assert [h.state for h in s.job(1).history] == [S.PENDING, S.RUNNING, S.REQUEUED, S.PENDING, S.RUNNING]


def test_cleaning_gates_a_job_requeued_later_and_leaves_other_gates_in_place():
    s = make()
    s.submit(spec(time_limit=10), 0)
    s.cycle(0)
    s.time_limit_reached(1, 0, 10)
    s.cleaning(1, 10)  # its program still ends (KillWait) when the user requeues it
    s.requeue(1, 11)
    s.hold(1, 11)
    s.cleaned(1, 12)
    assert s.cycle(12) == [] and s.job(1).reason == "JobHeldUser"
    s.release(1, 13)
    assert [e.job_id for e in s.cycle(13)] == [1]


def test_a_job_submitted_without_requeue_cannot_be_requeued():
    """scontrol requeue of a job with requeue disabled: "Requested operation is presently disabled"."""
    s = make()
    s.submit(spec(requeue=False), 0)
    s.cycle(0)
    with pytest.raises(FailedPrecondition, match="job 1 was submitted with --no-requeue .* submit it again"):
        s.requeue(1, 5)
    assert s.job(1).state is S.RUNNING and s.job(1).requeue_count == 0


def test_failed_ipus_node_fail_requeue_and_req_node_not_avail():
    s = make()
    s.submit(spec(ipus=16), 0)
    s.submit(spec(ipus=16, requeue=False), 0)
    s.cycle(0)
    (stop,) = s.fail_ipus([3], 1, "vipu-admin fail ipus")
    assert stop == StopJob(1, "slurm_1", S.NODE_FAIL, True, 0, 16)
    assert s.job(1).state is S.PENDING and s.job(1).requeue_count == 1
    assert s.job(1).ended_by == "IPU 3 of its partition failed (vipu-admin fail ipus)"
    s.cycle(2)
    assert s.job(1).reason == "ReqNodeNotAvail" and s.job(2).reason == "ReqNodeNotAvail"
    s.repair_ipus([3])
    s.cycle(3)
    assert s.job(1).state is S.RUNNING
    assert s.job(1).ended_by is not None  # kept while the next run goes: its start reads how the last one ended
    s.fail_ipus([0], 4)
    assert s.job(1).state is S.PENDING
    s.repair_ipus([0])
    s.cancel([1], 5)
    s.cycle(5)
    s.fail_ipus([14, 15], 6)
    assert s.job(2).state is S.NODE_FAIL  # requeue: false
    assert s.job(2).ended_by == "IPUs 14, 15 of its partition failed"
    assert s.job(1).state is S.CANCELLED and s.job(1).ended_by == "IPU 0 of its partition failed"  # its last run's


def test_a_run_that_ends_by_itself_clears_what_ended_the_one_before():
    """Regression: a job whose later run COMPLETED kept the cause of the run before it (EndedBy= a failed IPU)."""
    s = make()
    s.submit(spec(ipus=16, workload=sleep(10)), 0)
    s.cycle(0)
    s.fail_ipus([3], 1, "vipu-admin fail ipus")
    s.repair_ipus([3])
    s.cycle(2)
    assert s.job(1).state is S.RUNNING and s.job(1).ended_by.startswith("IPU 3")
    s.job_finished(1, 12)
    assert s.job(1).state is S.COMPLETED and s.job(1).ended_by is None


def test_gang_large_job_waits_for_a_whole_block_and_reserves_it():
    s = make()
    for _ in range(4):
        s.submit(spec(ipus=4, time_limit=100, workload=sleep(100)), 0)
    s.cycle(0)
    s.submit(spec(ipus=16, nice=-1000), 1)  # top priority, needs the whole Pod
    s.submit(spec(ipus=4, time_limit=500), 1)
    s.cycle(1)
    big, small = s.job(5), s.job(6)
    assert (big.state, big.reason, big.estimated_start) == (S.PENDING, "Resources", 100)
    assert small.state is S.PENDING and small.reason == "Priority"  # would run past the reservation
    for job_id in (1, 2, 3):
        s.job_finished(job_id, 50)
    s.cycle(50)
    assert s.job(5).state is S.PENDING and s.job(6).state is S.PENDING  # no partial gang, no overtaking
    s.job_finished(4, 100)
    s.cycle(100)
    assert s.job(5).state is S.RUNNING and s.job(5).first_ipu == 0


def test_allocations_confine_jobs_and_unknown_allocations_wait():
    s = make()
    s.submit(spec(ipus=4, allocation="a"), 0)
    s.submit(spec(ipus=4, allocation="nowhere"), 0)
    s.submit(spec(ipus=8, allocation="a", nice=500), 0)
    masks = {"a": 0xFF00, "default": 0xFFFF}
    effects = starts(s.cycle(0, allowed_masks=masks))
    assert [(e.job_id, e.first_ipu) for e in effects] == [(1, 8)]
    assert s.job(2).reason == "ReqNodeNotAvail" and s.job(3).reason == "Resources"


def test_available_mask_from_the_caller_is_respected():
    s = make()
    s.submit(spec(ipus=8), 0)
    effects = starts(s.cycle(0, available_mask=0xFF00))  # IPUs 0-7 hold a partition someone made by hand
    assert effects[0].first_ipu == 8


def test_queries_queue_history_info_priority():
    s = make(priority_calc_period=0)
    s.submit(spec(ipus=16, user="ann"), 0)
    s.submit(spec(ipus=4, user="bob", time_limit=100), 1)  # would delay job 1's reservation: no backfill
    s.submit(spec(ipus=2, user="bob", qos="high"), 2)
    s.cycle(3)
    queue = list(s.view().queue())
    assert [j.id for j in queue] == [3, 1, 2]  # running first, then pending in priority order
    assert [j.id for j in list(s.view().queue(lambda j: j.user == "bob"))] == [3, 2]
    assert [j.state for j in s.view().history()] == [S.PENDING, S.PENDING, S.RUNNING]
    rows = s.view().priorities(10)
    assert [r.job_id for r in rows] == [1, 2] and rows[0].total > rows[1].total
    assert s.job(1, now=10).priority.job_size == 100.0
    (ild,) = s.view().info()
    assert (ild.idle, ild.allocated, ild.failed, ild.largest_free_block) == (14, 2, 0, 8)
    (ild,) = s.view().info(available_mask=0b0000_1111_1111_0000 & ~0b11_0000_0000, drained_mask=0b1111_0000_0000_0000)
    assert (ild.idle, ild.allocated, ild.drained, ild.failed) == (6, 6, 4, 0)  # drained IPUs are not allocated
    (ild,) = s.view().info(available_mask=0b0000_1111_1111_0000 & ~0b11_0000_0000, drained_mask=0b1111_0000_0000_0000,
                    draining_mask=0b11)  # job 3's two IPUs: their agent was drained under it
    assert (ild.idle, ild.allocated, ild.draining, ild.drained, ild.failed) == (6, 4, 2, 4, 0)
    with pytest.raises(FailedPrecondition, match="only pending jobs"):
        s.priority(3, 10)


def test_hold_and_release_an_array_touch_only_pending_tasks():
    s = make()
    s.submit(spec(array="0-2", ipus=8), 0)
    s.cycle(0)
    assert [s.job(i).state for i in (1, 2, 3)] == [S.RUNNING, S.RUNNING, S.PENDING]
    s.hold(1, 1)
    assert s.job(3).held and not s.job(1).held
    s.release(1, 2)
    assert not s.job(3).held
    s.cancel([3], 3)
    with pytest.raises(FailedPrecondition, match="no PENDING tasks"):
        s.hold(1, 4)


def test_cancel_an_array_whose_first_task_ended():
    s = make()
    s.submit(spec(array="0-2", ipus=16), 0)
    s.cycle(0)
    s.job_finished(1, 5)
    assert s.cancel([1], 6) == []  # array id 1: cancels tasks 2 and 3, skips the ended task 1
    assert [s.job(i).state for i in (1, 2, 3)] == [S.COMPLETED, S.CANCELLED, S.CANCELLED]
    # once every task has ended, the array is refused as an ended job is (regression: "0 tasks cancelled", exit 0)
    with pytest.raises(FailedPrecondition, match="array job 1: every task already ended; nothing to cancel"):
        s.cancel([1], 7)


def test_usage_is_charged_only_after_the_commit(journal):
    s = make(journal=journal)
    s.submit(spec(user="ann"), 0)
    s.cycle(0)
    journal.fail_next = True
    with pytest.raises(OSError):
        s.job_finished(1, 50)
    assert s.job(1).state is S.RUNNING and s.fairshare.factors(50) == {}
    s.job_finished(1, 50)
    assert s.fairshare.factors(50) == {"ann": 0.5}


def test_jobs_the_walk_did_not_reach_are_explained_on_query():
    s = make(max_job_test=5, qos={"normal": {"priority": 1, "max_jobs_per_user": 1}, "low": {"priority": 0},
                                  "high": {"priority": 2}})
    s.submit(spec(ipus=16, user="ann"), 0)
    s.cycle(0)
    for i in range(39):
        s.submit(spec(ipus=1, qos="low", user="bob", nice=i), 1)
    s.submit(spec(ipus=1, user="ann", nice=5000), 1)  # last in line, and over ann's limit of one running job
    s.cycle(2)
    assert len(s.pending_info) < 40  # the walk stopped early: nothing could start
    reasons = {j.id: j.reason for j in list(s.view().queue())}
    assert reasons[2] == "Resources" and {reasons[i] for i in range(3, 41)} == {"Priority"}
    assert reasons[41] == "QOSMaxJobsPerUserLimit"
    s.submit(spec(ipus=1, user="cy"), 3)  # arrives after the cycle: not explained yet
    assert s.job(42).reason is None


def test_one_user_cannot_fill_the_queue_others_still_submit():
    """Slurm's MaxSubmitJobs: a user's (and an account's) pending and running jobs are bounded, so one user's flood
    leaves room for everyone else (issue 23, finding 8)."""
    from vipu.errors import ResourceExhausted
    from vipu.scheduler.submission import Submission

    s = make(max_submit_jobs_per_user=5, max_submit_jobs_per_account=7)
    s.submit(spec(user="bob", array="0-3", hold=True), 0)
    with pytest.raises(ResourceExhausted) as e:
        s.submit(spec(user="bob", array="0-1", hold=True), 1)
    assert e.value.reason == "SUBMIT_LIMIT" and "user bob has 4 jobs queued or running and this submit adds 2" in \
        e.value.message
    s.submit(spec(user="bob", hold=True), 2)  # the fifth fits
    s.submit(spec(user="carol", hold=True, account="lab"), 3)
    with pytest.raises(ResourceExhausted, match=r"account lab has 7 jobs .*; each account may have at most 7"):
        s.submit_many([Submission(spec(user=u, hold=True, account="lab")) for u in ("dan", "eve", "fay", "gus",
                                                                                        "hal", "ian", "jon")], 4)
    s.cancel([1], 5)  # an ended job leaves its user's count
    s.submit(spec(user="bob", hold=True), 6)


def test_an_array_larger_than_the_submit_limit_is_bad_input_not_a_wait():
    """Regression: it was told to wait for jobs to finish (exit 7), which could never make room for it."""
    from vipu.errors import InvalidArgument

    s = make(max_submit_jobs_per_user=3)
    with pytest.raises(InvalidArgument) as e:
        s.submit(spec(user="erin", array="0-99", hold=True), 0)
    assert e.value.message == ("this submit adds 100 jobs (array tasks count each), but each user may have at most 3"
                               " queued or running (max_submit_jobs_per_user): submit at most 3 tasks, e.g. an array"
                               " in parts")
    assert not list(s.view().queue())


def test_an_accounts_running_jobs_are_limited_across_its_users():
    """QOS MaxJobsPerAccount: two users of one account share its limit; another account and jobs without one do not."""
    s = make(qos={"normal": {"priority": 1, "max_jobs_per_account": 2}, "low": {"priority": 0}})
    for user, account in (("ann", "lab"), ("bob", "lab"), ("cy", "lab"), ("dee", "other"), ("eve", None)):
        s.submit(spec(ipus=1, user=user, **({"account": account} if account else {})), 0)
    s.cycle(0)
    states = {j.user: j.state for j in s.view().queue()}
    assert states == {"ann": S.RUNNING, "bob": S.RUNNING, "cy": S.PENDING, "dee": S.RUNNING, "eve": S.RUNNING}
    assert s.job(3).reason == "QOSMaxJobsPerAccount"
    s.job_finished(1, 5)
    s.cycle(5)
    assert s.job(3).state is S.RUNNING
