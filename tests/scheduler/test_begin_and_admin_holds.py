"""Begin times (sbatch --begin, reason BeginTime) and admin holds (scontrol hold by an operator, JobHeldAdmin).

A job whose begin time is still to come waits with reason BeginTime and an estimated start no earlier than that
time; it stays out of the cycle's walk and takes no backfill reservation, so thousands of them cost a cycle nothing,
and it joins the walk (and starts, if there is room) in the first cycle at or after its begin time. An admin hold is
released only by an admin; both survive a restart, and trace replay honours begin times in virtual time.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vipu.errors import AlreadyExists, InvalidArgument, PermissionDenied
from vipu.scheduler.begin import begin_time, parse_begin
from vipu.scheduler.effects import StartJob
from vipu.replay.run import replay
from vipu.scheduler.job_spec import load_spec, parse_spec
from vipu.scheduler.job_states import JobState
from vipu.replay.traces import TraceJob, load_trace

from vipu.control.driver import Driver, Timers
from tests.scheduler.builders import POD16, POD256, check_gangs, drive, make, sleep, spec
from tests.scheduler.test_gated import walked
from tests.scheduler.test_recovery import stored

S = JobState
POLICIES = ["fifo", "priority", "backfill", "sjf"]


def started(effects) -> list[int]:
    return [e.job_id for e in effects if isinstance(e, StartJob)]


# -- the field ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, normalised",
    [
        ("now", "now+0"),
        ("now+90", "now+90"),  # a bare count is seconds, as in Slurm
        ("now+10m", "now+600"),
        ("now+1h30m", "now+5400"),
        ("now+02:30:00", "now+9000"),
        ("now+1hour", "now+3600"),
        ("now+10minutes", "now+600"),
        ("NOW + 2 days", "now+172800"),
        ("now+1week", "now+604800"),
        ("now+1.5hours", "now+5400"),
        ("2026-11-22T14:00:00Z", datetime(2026, 11, 22, 14, tzinfo=timezone.utc).timestamp()),
        ("2026-11-22T15:00:00+01:00", datetime(2026, 11, 22, 14, tzinfo=timezone.utc).timestamp()),
        ("2026-11-22 14:00", datetime(2026, 11, 22, 14).timestamp()),  # no zone: local time
        ("2026-11-22", datetime(2026, 11, 22).timestamp()),  # midnight
        (1_790_000_000, 1_790_000_000.0),  # a number: seconds on the scheduler's clock
        ("1790000000", 1_790_000_000.0),  # ... also as text, as `vipu submit --begin 1790000000` sends it
        (" 1790000000.5 ", 1_790_000_000.5),
        (None, None),
        ("today", "now+0"),
        ("now-5m", "now+0"),  # the past: at once, as in Slurm
        ("16:00", "16:00:00"),  # a time of day, fixed at submit against the clock
        ("4:30PM", "16:30:00"),
        ("12:05am", "00:05:00"),
        ("teatime", "16:00:00"),
        ("midnight", "00:00:00"),
        ("tomorrow", "tomorrow"),
        ("11/22", "11/22 00:00:00"),  # a date without its year: this year's, or next year's once passed
        ("11.22-16:00", "11/22 16:00:00"),
        ("1122", "11/22 00:00:00"),  # MMDD
        ("11/22/26-16:00", datetime(2026, 11, 22, 16).timestamp()),
        ("112226", datetime(2026, 11, 22).timestamp()),  # MMDDYY
    ],
)
def test_begin_forms(text, normalised):
    assert parse_begin(text) == normalised
    assert parse_spec(spec(begin=text)).begin == normalised


def test_yaml_timestamps_are_read_as_times():
    assert load_spec("ipus: 1\nbegin: 2026-11-22 14:00:00\n").begin == datetime(2026, 11, 22, 14).timestamp()
    assert load_spec("ipus: 1\nbegin: 2026-11-22\n").begin == datetime(2026, 11, 22).timestamp()
    assert load_spec('{"ipus": 1, "begin": "now+1hour"}').begin == "now+3600"


@pytest.mark.parametrize(
    "value, needle",
    [
        ("soon", "'soon' is not a time"),
        ("10m", "write now+10m for a delay"),  # a bare duration is ambiguous
        ("25:00", "hours 0-23"),
        ("13:00pm", "AM or PM"),
        ("02/30", "not a date"),
        ("16", "Unix seconds (9 digits or more)"),
        ("now*5m", "now+OFFSET or now-OFFSET"),
        ("now+soon", "not a duration"),
        ("now+400days", "more than a year away"),
        ("2026-13-01", "not a valid ISO-8601 time"),
        (-1, "negative"),
        (math.inf, "not finite"),
        (True, "boolean"),
        ([1], "not a time"),
    ],
)
def test_unparseable_begin_is_refused_naming_the_field_and_the_fix(value, needle):
    with pytest.raises(InvalidArgument) as e:
        parse_spec(spec(begin=value))
    message = e.value.message
    assert message.startswith("invalid job spec: begin: ") and needle in message
    assert "now+" in message  # the fix is named


def test_relative_begin_is_fixed_at_submit_and_a_retry_finds_the_same_job():
    s = make()
    [job] = s.submit(spec(begin="now+10m"), 100, request_id="r")
    assert job.begin_time == 700 and job.spec.begin == "now+600"
    assert [j.id for j in s.submit(spec(begin="now+10m"), 130, request_id="r")] == [job.id]  # not AlreadyExists
    with pytest.raises(AlreadyExists):
        s.submit(spec(begin="now+11m"), 130, request_id="r")
    assert begin_time("now+600", 5) == 605 and begin_time(42.0, 5) == 42 and begin_time(None, 5) is None


def test_calendar_times_are_the_next_such_moment_after_submit():
    before = datetime(2026, 11, 27, 15, 30).timestamp()  # local time
    after = datetime(2026, 11, 27, 16, 30).timestamp()
    assert begin_time("16:00:00", before) == datetime(2026, 11, 27, 16).timestamp()  # later today
    assert begin_time("16:00:00", after) == datetime(2026, 11, 28, 16).timestamp()  # passed: tomorrow
    assert begin_time("tomorrow", after) == datetime(2026, 11, 28).timestamp()
    assert begin_time("11/22 00:00:00", after) == datetime(2027, 11, 22).timestamp()  # passed this year
    assert begin_time("12/24 18:00:00", after) == datetime(2026, 12, 24, 18).timestamp()
    assert begin_time("02/29 00:00:00", after) == datetime(2028, 2, 29).timestamp()  # the next leap year
    s = make()
    [job] = s.submit(spec(begin="teatime"), after, request_id="t")
    assert job.spec.begin == "16:00:00" and job.begin_time == datetime(2026, 11, 28, 16).timestamp()
    assert [j.id for j in s.submit(spec(begin="16:00"), after + 60, request_id="t")] == [job.id]


@given(now=st.floats(min_value=1e9, max_value=2e9), form=st.sampled_from(
    ["00:00:00", "09:15:30", "16:00:00", "23:59:59", "tomorrow", "01/01 00:00:00", "07/04 12:00:00",
     "02/29 06:00:00"]))
def test_a_calendar_time_is_never_before_submit_and_the_next_one(now, form):
    """The resolved moment is at or after `now`, and no earlier moment after `now` has the same wall-clock reading."""
    when = begin_time(form, now)
    assert when >= now
    at, earlier = datetime.fromtimestamp(when), datetime.fromtimestamp(now)
    if form == "tomorrow":
        assert at.date() == earlier.date() + timedelta(days=1) and at.time() == datetime.min.time()
    elif "/" in form:
        assert when - now <= 8 * 366 * 86400 and at.strftime("%m/%d %H:%M:%S") == form
    else:
        assert when - now <= 86400 + 3600 and at.strftime("%H:%M:%S") == form  # an hour more across a DST change


def test_begin_more_than_a_year_ahead_is_refused_and_nothing_is_stored(journal):
    s = make(journal=journal)
    with pytest.raises(InvalidArgument) as e:
        s.submit(spec(begin=1_000 + 400 * 86400.0), 1_000)
    assert "begin" in e.value.message and "366 days" in e.value.message
    assert journal.commits == [] and s.table.jobs == {}


@pytest.mark.parametrize("policy", POLICIES)
def test_begin_in_the_past_is_eligible_now(policy):
    s = make(policy=policy)
    [job] = s.submit(spec(begin="2001-01-01T00:00:00Z"), 1e9)
    assert job.begin_time < 1e9 and s.job(job.id).reason is None
    assert started(s.cycle(1e9)) == [job.id]
    [same] = s.submit(spec(begin=1e9 - 5), 1e9)  # a number in the past too
    assert started(s.cycle(1e9)) == [same.id]


# -- scheduling -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_future_begin_waits_with_reason_begintime_then_starts_at_that_time(policy):
    s = make(policy=policy)
    [job] = s.submit(spec(ipus=4, begin="now+100"), 0)
    [other] = s.submit(spec(ipus=4), 0)
    shown = s.job(job.id)
    assert (shown.state, shown.reason, shown.estimated_start, shown.begin_time) == (S.PENDING, "BeginTime", 100, 100)
    assert walked(s, 0) == [other.id]  # an idle Pod, yet it is not considered
    assert s.job(other.id).state is S.RUNNING and s.job(job.id).reason == "BeginTime"
    assert started(s.cycle(99.999)) == [] and s.job(job.id).reason == "BeginTime"
    assert started(s.cycle(100)) == [job.id]  # the first cycle at its begin time starts it
    assert s.job(job.id).start_time == 100
    t = s.table
    assert t.not_begun == set() and t.gated == set() and t.begins == [] and t.next_wake() is None


@pytest.mark.parametrize("policy", POLICIES)
def test_estimated_start_is_never_before_the_begin_time(policy):
    s = make(policy=policy)
    s.submit(spec(ipus=16, time_limit=500, workload=sleep(500)), 0)  # fills the Pod until 500
    [job] = s.submit(spec(ipus=16, begin="now+100"), 0)
    [early] = s.submit(spec(ipus=16, begin="now+1000"), 0)
    s.cycle(0)
    for now in (0, 50, 100, 200):
        s.cycle(now)
        for j in (job.id, early.id):
            shown = s.job(j)
            assert shown.estimated_start is None or shown.estimated_start >= shown.begin_time
    assert s.job(job.id).reason == "Resources" and s.job(job.id).estimated_start == 500  # walked since 100
    assert s.job(early.id).reason == "BeginTime" and s.job(early.id).estimated_start == 1000


def test_property_no_job_starts_before_its_begin_time_and_estimates_respect_it():
    import random

    rng = random.Random(7)
    for policy in POLICIES:
        s = make(pod=POD16, policy=policy)
        arrivals = []
        for _ in range(60):
            at = rng.choice(range(0, 400, 10))
            fields = dict(ipus=rng.choice([1, 2, 4, 8, 16]), time_limit=rng.choice([30, 60, 120]),
                          workload=sleep(rng.choice([5, 20, 30])))
            if rng.random() < 0.5:
                fields["begin"] = f"now+{rng.choice([1, 15, 45, 100, 250])}"
            arrivals.append((at, spec(**fields)))
        out = drive(s, arrivals)
        begins = {j.id: j.begin_time for j in s.table.jobs.values() if j.begin_time is not None}
        assert begins and all(out["start"][i] >= b for i, b in begins.items())
        assert all(out["first_estimate"].get(i, b) >= b for i, b in begins.items())
        assert len(out["start"]) == len(s.table.jobs)  # every job ran: the driver woke for the begin times


def test_a_future_begin_job_takes_no_backfill_reservation():
    s = make(policy="backfill")
    s.submit(spec(ipus=8, time_limit=100, workload=sleep(100)), 0)  # half the Pod until 100
    s.cycle(0)
    [top] = s.submit(spec(ipus=16, nice=-1000, begin="now+50"), 0)  # would reserve the whole Pod at 100
    [long] = s.submit(spec(ipus=8, time_limit=1000, workload=sleep(1000)), 0)  # would delay that reservation
    assert started(s.cycle(1)) == [long.id]  # not eligible yet: nothing is reserved for it
    assert s.job(top.id).reason == "BeginTime"
    s.cycle(50)
    assert s.job(top.id).reason == "Resources" and s.job(top.id).estimated_start == 1001  # behind the long job


def test_eligible_time_counts_from_begin_for_age_and_fifo_order():
    s = make(policy="fifo")
    s.submit(spec(ipus=16, time_limit=600, workload=sleep(600)), 0)  # fills the Pod
    s.cycle(0)
    [late] = s.submit(spec(ipus=4, begin="now+100"), 0)  # submitted first, eligible at 100
    [mid] = s.submit(spec(ipus=4), 50)
    s.cycle(150)
    assert [j.id for j in list(s.view().queue()) if j.state is S.PENDING] == [mid.id, late.id]
    s2 = make(policy="priority")
    s2.submit(spec(begin="now+100"), 0)
    assert s2.priority(1, 100).age == 0 and s2.priority(1, 50).age == 0 and s2.priority(1, 200).age > 0


def test_future_begin_jobs_do_not_grow_the_walk():
    s = make(pod=POD256, policy="backfill")
    blocker = s.submit(spec(ipus=256, time_limit=3600), 0)[0].id
    s.cycle(0)
    early = [j.id for j in s.submit(spec(begin="now+1800", array="0-999"), 1)]
    ready = [j.id for j in s.submit(spec(ipus=4), 1) + s.submit(spec(ipus=8), 1)]
    for now in range(2, 12):
        assert sorted(walked(s, now)) == ready  # the walk sees the runnable jobs only
        assert len(s.table.begins) == len(early)  # and the begin heap is only peeked at
    assert {s.job(i).reason for i in early} == {"BeginTime"}
    assert len(list(s.view().queue())) == 1 + len(early) + len(ready)  # squeue still lists them all
    s.cancel([blocker], 1801)
    assert len(walked(s, 1801)) == len(early) + len(ready)  # their time has come: they join the walk


def test_hold_and_dependency_combine_with_a_begin_time():
    s = make(policy="fifo")
    [dep] = s.submit(spec(ipus=16, time_limit=300, workload=sleep(300)), 0)
    [both] = s.submit(spec(begin="now+100", dependency=f"afterok:{dep.id}"), 0)
    [held] = s.submit(spec(begin="now+100", hold=True), 0)
    [later] = s.submit(spec(begin="now+100"), 0)
    s.cycle(0)
    assert [s.job(i).reason for i in (both.id, held.id, later.id)] == ["BeginTime", "JobHeldUser", "BeginTime"]
    s.hold(later.id, 10)
    assert s.job(later.id).reason == "JobHeldUser"
    s.release(later.id, 20)  # released before its begin time: waits for it again
    assert s.job(later.id).reason == "BeginTime" and s.job(later.id).estimated_start == 100
    s.cycle(100)
    assert s.job(both.id).reason == "Dependency" and s.job(held.id).reason == "JobHeldUser"
    assert s.job(later.id).state is S.PENDING and s.job(later.id).reason == "Resources"
    s.release(held.id, 150)  # released after its begin time: eligible at once
    s.job_finished(dep.id, 300)
    assert set(started(s.cycle(300))) == {both.id, held.id, later.id}
    t = s.table
    assert t.gated == set() and t.not_begun == set() and t.recheck == set() and t.gate_info == {}


def test_dependency_met_before_the_begin_time_still_waits_for_it():
    s = make(policy="fifo")
    [dep] = s.submit(spec(ipus=1, workload=sleep(5)), 0)
    [job] = s.submit(spec(begin="now+100", dependency=f"afterok:{dep.id}"), 0)
    s.cycle(0)
    s.job_finished(dep.id, 5)
    assert started(s.cycle(5)) == [] and s.job(job.id).reason == "BeginTime"
    assert started(s.cycle(100)) == [job.id]


def test_cancelled_and_rehold_jobs_leave_the_begin_index():
    s = make()
    [a] = s.submit(spec(begin="now+100"), 0)
    [b] = s.submit(spec(begin="now+100"), 0)
    for now in range(1, 200):  # hold/release churn does not grow the heap without bound
        s.hold(b.id, 0.5)
        s.release(b.id, 0.5)
    assert len(s.table.begins) <= 2 * len(s.table.not_begun) + 64
    s.cancel([a.id], 1)
    assert s.table.not_begun == {b.id} and a.id not in s.table.gated
    assert started(s.cycle(100)) == [b.id] and s.table.begins == []


def test_the_driver_wakes_at_the_earliest_begin_time():
    s = make()
    d = Driver(s, Timers())
    assert d.next_time() is None
    s.submit(spec(begin="now+0.25"), 0)
    s.submit(spec(begin="now+0.5"), 0)
    d.step(0)
    assert d.next_time() == 0.25
    d.step(0.25)
    assert s.job(1).state is S.RUNNING and d.next_time() == 0.5


def test_replay_honours_begin_times_in_virtual_time():
    jobs = [
        TraceJob(submit_time=0, ipus=16, duration=10, time_limit=60, begin=500),
        TraceJob(submit_time=0, ipus=16, duration=10, time_limit=60),
        TraceJob(submit_time=5, ipus=16, duration=10, time_limit=60, begin=1),  # already past: eligible at once
    ]
    for policy in POLICIES:
        r = replay(jobs, POD16, policy)
        assert (r.finished, r.unfinished) == (3, 0)
        assert r.makespan == 510  # the last job starts at its begin time, with no other event to wake the loop
        # waits count from eligibility: the first job starts at its begin time (0, not 500), the third waits 5 s
        # for the second from its submission (its begin time was already past)
        assert (r.avg_wait, r.max_wait) == (pytest.approx(5 / 3), 5)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_native_trace_begin_column(tmp_path, suffix):
    import json

    rows = [{"submit_time": 0, "ipus": 4, "duration": 10, "begin": "1h"},
            {"submit_time": 0, "ipus": 4, "duration": 10, "begin": ""}]
    path = tmp_path / f"t{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    else:
        path.write_text("submit_time,ipus,duration,begin\n0,4,10,1h\n0,4,10,\n")
    trace = load_trace(path)
    assert [j.begin for j in trace.jobs] == [3600, None] and "begin" in trace.mapping
    assert replay(trace.jobs, POD16, "backfill").makespan == 3610


# -- admin holds ----------------------------------------------------------------------------------------------


def test_admin_hold_needs_an_admin_release():
    s = make()
    s.submit(spec(ipus=16, time_limit=600), 0)
    s.cycle(0)
    [job] = s.submit(spec(), 0)
    s.hold(job.id, 1, admin=True)
    shown = s.job(job.id)
    assert (shown.held, shown.admin_hold, shown.reason) == (True, True, "JobHeldAdmin")
    s.hold(job.id, 2)  # a user hold never weakens an admin hold
    assert s.job(job.id).reason == "JobHeldAdmin"
    with pytest.raises(PermissionDenied) as e:
        s.release(job.id, 3)
    assert "held by an admin (JobHeldAdmin)" in e.value.message and "only an admin" in e.value.message
    assert s.job(job.id).reason == "JobHeldAdmin" and walked(s, 3) == []
    s.release(job.id, 4, admin=True)
    shown = s.job(job.id)
    assert (shown.held, shown.admin_hold) == (False, False) and walked(s, 5) == [job.id]


def test_user_hold_stays_user_and_an_admin_hold_replaces_it():
    s = make()
    s.submit(spec(ipus=16, time_limit=600), 0)
    [job] = s.submit(spec(hold=True), 0)
    assert s.job(job.id).reason == "JobHeldUser"
    s.release(job.id, 1)  # anyone may release a user hold
    s.hold(job.id, 2)
    s.hold(job.id, 3, admin=True)
    assert s.job(job.id).reason == "JobHeldAdmin"
    s.release(job.id, 4, admin=True)  # an admin releases both kinds
    assert not s.job(job.id).held


def test_non_admin_release_of_an_array_with_admin_held_tasks_releases_nothing():
    s = make()
    s.submit(spec(ipus=16, time_limit=600), 0)
    tasks = [j.id for j in s.submit(spec(array="0-3", hold=True), 0)]
    array = s.job(tasks[0]).array_job_id
    s.hold(tasks[2], 1, admin=True)
    with pytest.raises(PermissionDenied) as e:
        s.release(array, 2)
    assert f"array job {array} (task 2) is held by an admin" in e.value.message  # the task's index, not its job id
    with pytest.raises(PermissionDenied) as e:
        s.release(tasks[2], 2, single=True)
    assert e.value.message.startswith(f"job {array}_2 is held by an admin")  # as squeue shows it
    assert all(s.job(i).held for i in tasks)
    s.hold(array, 3, admin=True)
    assert {s.job(i).reason for i in tasks} == {"JobHeldAdmin"}
    s.release(array, 4, admin=True)
    assert not any(s.job(i).held for i in tasks)


def test_holds_and_begin_times_survive_a_restart(journal):
    s = make(journal=journal)
    s.submit(spec(ipus=16, time_limit=600), 0)
    [admin_held] = s.submit(spec(), 0)
    [user_held] = s.submit(spec(hold=True), 0)
    [early] = s.submit(spec(begin="now+500"), 0)
    s.cycle(0)
    s.hold(admin_held.id, 1, admin=True)
    recovered = make()
    recovered.recover(stored(journal), now=100, partitions=["slurm_1"])
    assert recovered.job(admin_held.id).reason == "JobHeldAdmin"
    assert recovered.job(user_held.id).reason == "JobHeldUser"
    assert (recovered.job(early.id).reason, recovered.job(early.id).estimated_start) == ("BeginTime", 500)
    with pytest.raises(PermissionDenied):
        recovered.release(admin_held.id, 101)
    recovered.job_finished(1, 200)
    assert started(recovered.cycle(200)) == []  # nothing eligible: both held, the other not begun
    assert started(recovered.cycle(500)) == [early.id]
    late = make()
    late.recover(stored(journal), now=1000)  # restarted after its begin time: eligible at once
    assert late.job(early.id).reason is None and early.id not in late.table.gated


def test_the_gang_invariant_holds_with_begin_times():
    s = make(pod=POD16, policy="backfill")
    arrivals = [(t, spec(ipus=ipus, time_limit=50, workload=sleep(20), begin=f"now+{b}"))
                for t, ipus, b in [(0, 8, 0), (0, 8, 30), (5, 16, 10), (10, 4, 0), (10, 4, 100)]]
    out = drive(s, arrivals)
    check_gangs(s)
    assert len(out["end"]) == 5


@pytest.mark.parametrize("text", ["16:00", "4:30pm", "midnight", "tomorrow", "11/22", "11.22-16:30", "1122",
                                  "112226", "2026-11-22T16:00", "now+90", "now-1hour"])
def test_a_begin_read_once_reads_again_the_same(text):
    """Regression: `vipu submit --begin 11/22` was refused: the kept form '11/22 00:00:00' did not read back when the
    spec was checked again with its flags."""
    kept = parse_begin(text)
    assert parse_begin(kept) == kept
