"""Trace replay in virtual time: sane metrics on an openb-format pod list (made up by tests/replay/samples.py, as
the public trace stays outside the repository), native traces, TIMEOUT, preemption."""

import json
from dataclasses import replace
from itertools import count

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.config import QosSpec, SchedulerConfig
from vipu.replay.summary import format_table
from vipu.replay.run import PROGRESS_STEPS, replay, replay_run
from vipu.replay.simulation import main_replay, simulate_trace
from vipu.replay.traces import TraceJob, load_trace, next_power_of_two, read_openb, rounded_limit

from tests.replay.samples import write_openb
from tests.scheduler.builders import POD16, POD256


@pytest.fixture(scope="module")
def openb(tmp_path_factory):
    return str(write_openb(tmp_path_factory.mktemp("openb") / "openb_pod_list.csv", rows=500))


@pytest.fixture(scope="module")
def openb_head(openb):
    return read_openb(openb, limit=400, max_ipus=POD256.max_partition_ipus)


def test_openb_mapping(openb_head):
    jobs = openb_head.jobs
    assert 250 < len(jobs) < 400 and sum(openb_head.skipped.values()) + len(jobs) == 400
    assert all(j.ipus in (4, 8, 16, 32) and j.duration >= 1 and j.time_limit >= j.duration for j in jobs)
    assert "next power of two" in openb_head.mapping and "4 IPUs per GPU" in openb_head.mapping
    assert next_power_of_two(3) == 4 and next_power_of_two(1) == 1 and rounded_limit(61) == 120


@pytest.mark.parametrize("policy", ["fifo", "priority", "backfill", "sjf"])
def test_openb_head_replays_with_sane_metrics(openb_head, policy):
    ticks = count()
    r = replay(openb_head.jobs, POD256, policy, timer=lambda: float(next(ticks)))
    assert (r.jobs, r.finished, r.unfinished, r.timeouts) == (len(openb_head.jobs), len(openb_head.jobs), 0, 0)
    assert 0 < r.utilisation <= 1 and 0 <= r.fragmentation <= 1
    assert 0 <= r.avg_wait <= r.avg_jct and r.p50_jct <= r.p95_jct and r.makespan > 0
    assert r.wall_seconds == 1.0 and r.jobs_per_second == len(openb_head.jobs)
    assert replay(openb_head.jobs, POD256, policy) == replay(openb_head.jobs, POD256, policy)  # deterministic


def write_native(tmp_path, rows, suffix):
    path = tmp_path / f"trace{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    else:
        keys = list(rows[0])
        path.write_text(",".join(keys) + "\n" + "\n".join(",".join(str(r[k]) for k in keys) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_native_trace_timeout_and_preemption(tmp_path, suffix):
    rows = [
        {"submit_time": 0, "ipus": 16, "duration": "10m", "time_limit": "5m", "user": "a", "qos": "low"},
        {"submit_time": 10, "ipus": 8, "duration": 60, "time_limit": 120, "user": "b", "qos": "high"},
        {"submit_time": 20, "ipus": 4, "duration": 30, "time_limit": "", "user": "c", "qos": "normal"},
    ]
    trace = load_trace(write_native(tmp_path, rows, suffix))
    assert [j.time_limit for j in trace.jobs] == [300, 120, 60]
    r = replay(trace.jobs, POD16, "backfill")
    assert r.finished == 3 and r.preemptions == 1 and r.timeouts == 1  # job 1: evicted, requeued, then TIMEOUT


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_native_times_on_a_unix_clock_replay_as_from_0(tmp_path, suffix):
    """Any origin will do (docs/traces.md): Unix times, in exponent form too, give the figures of the same trace
    counted from 0. Regression: a submit time past 366 days was refused as "longer than a year"."""
    rows = [{"submit_time": 0, "ipus": 16, "duration": 100, "begin": ""},
            {"submit_time": 10, "ipus": 16, "duration": 50, "begin": 500}]
    at_0 = replay(load_trace(write_native(tmp_path, rows, suffix)).jobs, POD16, "fifo")
    unix = [{**rows[0], "submit_time": "1.7e9"}, {**rows[1], "submit_time": 1700000010, "begin": 1700000500}]
    trace = load_trace(write_native(tmp_path, unix, suffix))
    assert [(j.submit_time, j.begin) for j in trace.jobs] == [(1.7e9, None), (1700000010, 1700000500)]
    assert replay(trace.jobs, POD16, "fifo") == at_0
    before_0 = write_native(tmp_path, [{**rows[0], "submit_time": -100}], suffix)
    with pytest.raises(InvalidArgument, match="submit_time: '?-100'? is negative; times on the trace's clock are"
                       " seconds of 0 or more"):
        load_trace(before_0)


def test_native_trace_errors(tmp_path):
    bad = write_native(tmp_path, [{"submit_time": 0, "ipus": 4}], ".csv")
    with pytest.raises(InvalidArgument, match="column duration is missing"):
        load_trace(bad)
    with pytest.raises(InvalidArgument, match="not a readable file"):
        load_trace(tmp_path / "nope.csv")


def test_main_replay_report(openb):
    text = main_replay(openb, "bow-pod64", ["fifo", "backfill"], timer=lambda: 0.0, limit=150)
    lines = text.splitlines()
    assert "on bow-pod64 (64 IPUs)" in lines[0] and "skipped:" in lines[0]
    assert lines[1].startswith("openb -> IPU-Pod mapping") and "bsld = max(1, " in lines[3]
    assert lines[2].startswith("the trace's own schedule, on its own cluster (not this Pod): ")  # its recorded waits
    assert lines[5].startswith("fifo") and lines[6].startswith("backfill") and lines[4].endswith("jobs/s")
    assert lines[7] == "" and lines[8].split()[:3] == ["policy", "avg", "bsld"]
    assert lines[9].startswith("fifo") and lines[10].startswith("backfill") and len(lines) == 11


def test_format_table_and_empty_trace():
    r = replay([], POD16, "fifo")
    assert r.jobs == 0 and r.makespan is None  # no job, no makespan (test_edge_traces.py)
    text = format_table([r])
    assert text.splitlines()[0].split()[:3] == ["policy", "jobs", "done"]
    assert replay([TraceJob(0, 4, 10, 60)], POD16, "sjf").avg_jct == 10


def test_main_replay_repeat_shows_the_fastest_run(openb):
    clock = iter([0.0, 5.0, 10.0, 11.0])  # two replays of one policy: 5 s, then 1 s
    text = main_replay(openb, "bow-pod64", ["fifo"], timer=lambda: next(clock), repeat=2, limit=150)
    once = main_replay(openb, "bow-pod64", ["fifo"], timer=lambda: 0.0, limit=150)
    row, row_once = text.splitlines()[5].split(), once.splitlines()[5].split()
    assert row[:-1] == row_once[:-1] and row[-1] == f"{int(row[1]):,}"  # same results; jobs / 1 s


def test_compression_brings_arrivals_and_begin_times_closer_to_the_first_submission(tmp_path, openb):
    path = tmp_path / "t.csv"
    path.write_text("submit_time,ipus,duration,begin\n100,4,10,\n140,4,10,300\n")
    once, four = load_trace(path), load_trace(path, compression=4)
    assert [(j.submit_time, j.begin) for j in once.jobs] == [(100, None), (140, 300)]
    assert [(j.submit_time, j.begin) for j in four.jobs] == [(100, None), (110, 150)]
    assert [(j.duration, j.time_limit) for j in four.jobs] == [(j.duration, j.time_limit) for j in once.jobs]
    assert "4x compressed" in four.mapping and "compressed" not in once.mapping
    four_x = load_trace(openb, compression=4, limit=50)
    assert four_x.jobs[1].submit_time == read_openb(openb, limit=50).jobs[1].submit_time / 4  # bench_replay's path


def test_replay_reports_the_longest_wait():
    jobs = [TraceJob(0, 16, 100, 128), TraceJob(10, 16, 50, 64), TraceJob(20, 16, 50, 64)]
    r = replay(jobs, POD16, "fifo")
    assert (r.max_wait, r.p95_wait) == (130, 130) and r.avg_wait == (0 + 90 + 130) / 3


def test_fragmentation_counts_only_jobs_that_could_start():
    """Free IPUs no eligible job can use are fragmentation; a job that may not start yet (its begin time is ahead)
    uses none of them. Regression: such a job counted as the smallest waiting one, and fragmentation read 0."""
    busy = [TraceJob(0, 8, 1000, 1000), TraceJob(1, 16, 10, 10)]  # 8 free IPUs for 999 s, and a job of 16 waits
    alone = replay(busy, POD16, "fifo")
    later = replay([*busy, TraceJob(1, 4, 10, 10, begin=1500)], POD16, "fifo")
    assert alone.fragmentation == pytest.approx(8 * 999 / (16 * alone.makespan))
    assert later.fragmentation == pytest.approx(8 * 999 / (16 * later.makespan))


def test_wait_counts_from_eligibility_and_jct_from_submission():
    """A job's wait starts at its begin time when that is later than its submission: time before it is a wait the
    user asked for (sacct counts from eligible time too); its JCT still runs from its submission."""
    alone = replay([TraceJob(20, 4, 30, 60, begin=3600)], POD16, "fifo")
    assert (alone.max_wait, alone.avg_jct) == (0, 3610)  # the wait read 3580 s, and passed for starvation
    # eligible at 500, it then waits for the 16 IPUs until 1000: 500 s, not the 990 s since its submission
    behind = replay([TraceJob(0, 16, 1000, 1024), TraceJob(10, 16, 10, 60, begin=500)], POD16, "fifo")
    assert (behind.max_wait, behind.p50_jct) == (500, 1000)


def test_a_requeued_jobs_wait_starts_at_its_requeue():
    """As the live queue-wait histogram observes each run: the preempted job's wait is from its requeue (10 s) to
    its second start (70 s), not from its submission, which would count its first run as waiting."""
    jobs = [TraceJob(0, 16, 600, 300, qos="low"), TraceJob(10, 8, 60, 120, qos="high")]
    r = replay(jobs, POD16, "backfill")
    assert (r.preemptions, r.timeouts, r.max_wait, r.avg_wait) == (1, 1, 60, 30)


def test_makespan_ends_with_the_last_job_not_a_cancelled_runs_end():
    """A run cancelled by preemption leaves its end event in the heap; makespan and utilisation ignore it."""
    config = SchedulerConfig(qos={"scavenger": QosSpec(preempt_mode="cancel"),
                                  "normal": QosSpec(priority=50, preempt=("scavenger",))})
    jobs = [TraceJob(0, 16, 3600, 3840, qos="scavenger"), TraceJob(60, 8, 600, 960)]  # qos: default_qos, normal
    r = replay(jobs, POD16, "backfill", config)
    assert (r.finished, r.preemptions, r.makespan) == (2, 1, 660)  # it read 3600: the cancelled run's hour
    assert r.utilisation == pytest.approx((16 * 60 + 8 * 600) / (16 * 660))


def test_utilisation_while_jobs_arrive_leaves_out_the_drain():
    """One long job submitted last stretches the makespan (util falls to a quarter); over the arrival window, from
    the first submission to the last, the Pod was full, and arrival_utilisation says so."""
    jobs = [TraceJob(0, 16, 100, 128), TraceJob(10, 16, 100, 128), TraceJob(20, 4, 10000, 16384)]
    r = replay(jobs, POD16, "fifo")
    assert r.makespan == 10200 and r.utilisation == pytest.approx((16 * 200 + 4 * 10000) / (16 * 10200))
    assert r.arrival_utilisation == 1.0
    # half the Pod busy from 0 to 50 of a 100 s window
    assert replay([TraceJob(0, 8, 50, 64), TraceJob(100, 4, 10, 60)], POD16, "fifo").arrival_utilisation == 0.25
    assert replay([TraceJob(0, 8, 50, 64), TraceJob(0, 4, 10, 60)], POD16, "fifo").arrival_utilisation is None


def test_a_preempted_runs_ipu_seconds_count_as_used_and_are_reported_apart():
    """The preempted job held 16 IPUs for 10 s before its requeue: utilisation counts them (no other job could
    have them), preempted_share says how much of it was such lost work."""
    jobs = [TraceJob(0, 16, 600, 300, qos="low"), TraceJob(10, 8, 60, 120, qos="high")]
    r = replay(jobs, POD16, "backfill")
    # pretrain runs 0-10, is preempted, runs again 70-370 to its limit; finetune runs 10-70
    assert r.makespan == 370 and r.preemptions == 1
    assert r.utilisation == pytest.approx((16 * 10 + 8 * 60 + 16 * 300) / (16 * 370))
    assert r.preempted_share == pytest.approx(16 * 10 / (16 * 370))


@pytest.mark.parametrize("caps", [{"max_submit_jobs_per_user": 2}, {"max_jobs": 2}])
def test_queue_caps_refuse_no_row_of_a_trace(caps):
    """Every row of a trace is a submission its cluster accepted: the caps that bound a live controller's queue
    refuse none. Regression: one user's 60,000 jobs at once stopped the replay at the 50,001st with "wait for some
    to finish or cancel some"."""
    jobs = [TraceJob(0, 16, 10, 60, user="alice") for _ in range(5)]  # all queued at once behind the first
    r = replay(jobs, POD16, "fifo", SchedulerConfig(**caps))
    assert (r.jobs, r.finished, r.makespan, r.max_wait) == (5, 5, 50, 40)


def test_a_long_replay_says_how_far_it_is_and_the_same_figures():
    """A replay of hours said nothing until it ended; now every PROGRESS_EVERY seconds of wall time one line, from
    the timer it is given (here each reading is a minute later), and its figures are those of a silent replay."""
    jobs = [TraceJob(10 * n, 4, 100, 128) for n in range(PROGRESS_STEPS * 2)]
    minutes = count(0, 60)
    told: list[str] = []
    run = replay_run(jobs, POD16, "fifo", timer=lambda: float(next(minutes)), progress=told.append)
    assert len(told) >= 2 and told[0].startswith("fifo: ") and f"of {len(jobs)} jobs submitted" in told[0]
    silent = replay_run(jobs, POD16, "fifo")
    assert run.jobs == silent.jobs and replace(run.result, wall_seconds=None) == silent.result


def test_limit_factor_sets_every_time_limit_from_the_run_time(tmp_path):
    """How accurate backfill's estimates are is the study's choice: F x the run time, in place of a trace's own
    limit or the power-of-two rounding, at least 1 s and at most the year a job may ask for; below 1 is refused."""
    path = write_native(tmp_path, [{"submit_time": 0, "ipus": 16, "duration": 100, "time_limit": 3600},
                                   {"submit_time": 10, "ipus": 16, "duration": 0, "time_limit": 60},
                                   {"submit_time": 20, "ipus": 4, "duration": "300d", "time_limit": ""}], ".csv")
    exact = simulate_trace(str(path), "bow-pod16", ["backfill"], limit_factor=1)
    assert [j.time_limit for j in exact.trace.jobs] == [100, 1, 300 * 86400]
    assert exact.trace.mapping.endswith("time limits = 1 x run time (at least 1 s, at most 366 days), in place of the"
                                        " above (--limit-factor 1)")
    assert (exact.results[0].finished, exact.results[0].timeouts) == (3, 0)
    assert [j.time_limit for j in simulate_trace(str(path), "bow-pod16", ["fifo"], limit_factor=2).trace.jobs] == [
        200, 1, 366 * 86400]
    with pytest.raises(InvalidArgument, match="--limit-factor is 0.5; give 1 or more"):
        simulate_trace(str(path), "bow-pod16", ["fifo"], limit_factor=0.5)
