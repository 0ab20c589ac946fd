"""Edge traces: jobs of 0 s, one job, every job at one moment, no job, jobs the Pod cannot hold, broken fields. A
figure over nothing is undefined (None; `-` in the tables, null in JSON), never a 0 that reads as measured; every
reader keeps a run time of 0; columns of one kind print alike."""

from __future__ import annotations

import pytest

from tests.replay.samples import OPENB_HEADER
from tests.scheduler.builders import POD16
from vipu.errors import InvalidArgument
from vipu.replay.plots import binned
from vipu.replay.run import replay, replay_run
from vipu.replay.simulation import report, simulate_trace
from vipu.replay.summary import PAPER_COLUMNS, format_table, percentile, result_json, seeds_json
from vipu.replay.trace_rows import TraceJob
from vipu.replay.traces import load_trace

UNDEFINED_OVER_NO_TIME = ("utilisation", "arrival_utilisation", "preempted_share", "fragmentation", "avg_queue")


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def cells(text: str, policy: str) -> dict[str, str]:
    """The cells of `policy`'s rows in both tables of a report, by heading (headings split on two spaces)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("policy"):
            headings = [h.strip() for h in line.split("  ") if h.strip()]
            row = next(row for row in lines[i + 1:] if row.split()[0] == policy)
            out.update(zip(headings, row.split()))
    return out


def test_a_job_of_0_s_has_a_bounded_slowdown_and_no_slowdown_and_its_makespan_no_utilisation(tmp_path):
    sim = simulate_trace(write(tmp_path, "zero.csv", "submit_time,ipus,duration\n0,4,0\n"), "bow-pod16", ["fifo"])
    r = sim.results[0]
    assert (r.jobs, r.finished, r.makespan, r.avg_jct, r.max_wait) == (1, 1, 0, 0, 0)
    # bsld = max(1, (0 + 0) / max(0, 10)) = 1; slowdown (0 + 0) / 0 is undefined, and so is their mean over none
    assert (r.avg_bsld, r.p95_bsld, r.max_bsld, r.avg_slowdown, r.fairness) == (1, 1, 1, None, 1)
    assert all(getattr(r, name) is None for name in UNDEFINED_OVER_NO_TIME)  # shares of a makespan of 0 s
    shown = cells(report(sim), "fifo")
    assert [shown[c] for c in ("util", "arr util", "frag", "avg slowdown", "avg queue")] == ["-"] * 5
    assert (shown["makespan s"], shown["avg bsld"], shown["max bsld"], shown["max queue"]) == ("0", "1.00", "1.00", "0")
    data = result_json(r, sim)
    assert [data[k] for k in ("util_percent", "arrival_util_percent", "preempted_util_percent", "frag_percent",
                              "avg_slowdown", "avg_queue")] == [None] * 6
    assert (data["makespan_s"], data["avg_bsld"]) == (0, 1)
    assert report(sim).splitlines()[0].endswith("1 job replayed; skipped: none")


def test_a_job_of_0_s_that_waits_is_slowed_down_by_its_wait_over_the_threshold():
    jobs = [TraceJob(0, 16, 100, 128), TraceJob(10, 16, 0, 60)]  # the second waits 90 s for the whole Pod
    run = replay_run(jobs, POD16, "fifo")
    short = run.jobs[1]
    assert (short.wait_s, short.run_time_s, short.slowdown, short.bounded_slowdown) == (90, 0, None, 9.0)
    r = run.result
    assert (r.avg_bsld, r.max_bsld, r.avg_slowdown) == (5.0, 9.0, 1.0)  # the slowdown of the one job with one
    assert r.utilisation == 100 / 100 and r.avg_queue == pytest.approx(90 / 100)
    assert replay_run(jobs, POD16, "fifo", bsld_threshold=60).jobs[1].bounded_slowdown == 1.5


@pytest.mark.parametrize("name, text", [
    ("t.csv", "submit_time,ipus,duration\n0,4,0\n"),
    ("t.jsonl", '{"submit_time": 0, "ipus": 4, "duration": 0}\n'),
    ("t.swf", "; MaxProcs: 16\n1 0 0 0 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"),
    ("o.csv", OPENB_HEADER + "\np1,1000,100,1,1000,,LS,Running,0,50,50\n"),
    ("h.csv", "job_id,user,gpu_num,state,submit_time,duration\n1,u,1,COMPLETED,0,0\n"),
])
def test_every_reader_keeps_a_run_time_of_0(tmp_path, name, text):
    """SWF's definition: a run time of 0 is a run under half a second; no reader makes it 1 s any more."""
    [job] = load_trace(write(tmp_path, name, text), max_ipus=16).jobs
    assert (job.ipus, job.duration, job.time_limit) == (4, 0, 60)


def test_jobs_that_never_ran_are_still_skipped_not_replayed_as_0_s(tmp_path):
    swf = load_trace(write(tmp_path, "c.swf", "; MaxProcs: 16\n1 0 0 0 4 -1 -1 4 60 -1 5 1 1 -1 1 -1 -1 -1\n"
                                               "2 0 0 9 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n"))
    helios = load_trace(write(tmp_path, "h.csv", "job_id,user,gpu_num,state,submit_time,duration\n"
                                                 "1,u,1,CANCELLED,0,0\n2,u,1,FAILED,0,0\n"))
    assert dict(swf.skipped) == {"cancelled before it ran": 1} and [j.duration for j in swf.jobs] == [9]
    assert dict(helios.skipped) == {"cancelled before it ran": 1} and [j.duration for j in helios.jobs] == [0]


def test_no_job_leaves_every_figure_over_jobs_undefined():
    r = replay([], POD16, "fifo")
    assert (r.jobs, r.makespan, r.avg_jct, r.p95_wait, r.max_wait, r.avg_bsld, r.fairness, r.max_queue) == \
        (0, None, None, None, None, None, None, None)
    row = format_table([r]).splitlines()[1].split()
    assert row[:3] == ["fifo", "0", "0"] and set(row[3:13]) == {"-"}


def test_a_seed_that_generates_no_job_is_refused_not_averaged_in():
    """--synthetic 1 on a Bow-Pod16: seed 2's one job needs more than 16 IPUs. Its figures were 0 and pulled the
    mean bounded slowdown over 12 seeds to 0.92, below its floor of 1."""
    with pytest.raises(InvalidArgument, match=r"--synthetic 1: seed 2 generated no job that fits bow-pod16 \(skipped:"
                                              r" 1 larger than the Pod's largest partition\); give more jobs"):
        simulate_trace(None, "bow-pod16", ["fifo"], synthetic=1, seed=1, seeds=3)


def test_a_figure_undefined_over_any_seed_is_undefined_over_the_seeds(tmp_path):
    timed = replay([TraceJob(0, 4, 10, 60)], POD16, "fifo")
    instant = replay([TraceJob(0, 4, 0, 60)], POD16, "fifo")
    row = cells(format_table([[timed, instant]]), "fifo")
    assert (row["util"], row["makespan s"]) == ("-", "5±64")  # 25% and none: no mean; 10 s and 0 s: a mean
    sim = simulate_trace(write(tmp_path, "t.csv", "submit_time,ipus,duration\n0,4,10\n"), "bow-pod16", ["fifo"])
    data = seeds_json([timed, instant], [1, 2], sim)
    assert data["util_percent"] is None and "util_percent" not in data["ci95"] and data["makespan_s"] == 5
    assert [s["util_percent"] for s in data["per_seed"]] == [25.0, None]


def test_every_job_at_one_moment_has_no_arrival_window_but_a_makespan():
    r = replay([TraceJob(0, 4, 10, 60)] * 3, POD16, "fifo")
    assert (r.makespan, r.utilisation, r.arrival_utilisation, r.avg_queue) == (10, 0.75, None, 0)


def test_bounded_slowdowns_print_alike_so_a_max_never_shows_below_its_p95():
    """docs/traces.md showed p95 1.23 beside max 1.2 (the same job's 1.2333, at two decimals and at one)."""
    specs = {name: spec for name, spec, _ in PAPER_COLUMNS}
    assert specs["avg bsld"] == specs["p95 bsld"] == specs["max bsld"] == specs["avg slowdown"]
    jobs = [TraceJob(0, 16, 600, 300, qos="low"), TraceJob(10, 8, 60, 120, qos="high"), TraceJob(20, 4, 30, 60)]
    row = cells(format_table([replay(jobs, POD16, "backfill")], PAPER_COLUMNS), "backfill")
    assert (row["p95 bsld"], row["max bsld"]) == ("1.23", "1.23")


@pytest.mark.parametrize("line, message", [
    ("1 0 0 -5 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1", ":2: field 4 (run_time) is -5; SWF fields are 0 or more, -1"),
    ("1 -3 0 5 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1", ":2: field 2 (submit) is -3;"),
    ("1 0 0 5 -2 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1", ":2: field 5 (allocated_processors) is -2;"),
    ("1 0 0 5 4 -1 -1 4 -60 -1 1 1 1 -1 1 -1 -1 -1", ":2: field 9 (requested_time) is -60;"),
])
def test_an_swf_value_below_minus_1_is_refused_naming_field_and_line(tmp_path, line, message):
    """-1 is SWF's unknown; -5 was skipped as if it were -1, counted under "no run time (-1)"."""
    path = write(tmp_path, "bad.swf", "; MaxProcs: 16\n" + line + "\n")
    with pytest.raises(InvalidArgument) as error:
        load_trace(path)
    assert error.value.message.startswith(path + ":2: ") and message in error.value.message
    assert error.value.message.endswith("fix the line")


def test_an_swf_job_on_0_processors_is_skipped_under_its_own_reason(tmp_path):
    trace = load_trace(write(tmp_path, "p.swf", "; MaxProcs: 16\n1 0 0 5 0 -1 -1 0 60 -1 1 1 1 -1 1 -1 -1 -1\n"
                                                "2 0 0 5 -1 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n"))
    assert dict(trace.skipped) == {"no processors (-1 or 0)": 1} and [j.ipus for j in trace.jobs] == [4]


@pytest.mark.parametrize("text, message", [
    ("submit_time,ipus,duration\n0,0,10\n", ":2: ipus: 0 is not a number of IPUs; give a power of two such as 4"),
    ("submit_time,ipus,duration\n0,32,10\n", ":2: ipus is 32 but bow-pod16 has 16 IPUs; the largest partition is"
     " 16: give ipus 16 or less, or a Pod that has 32 IPUs (bow-pod64)"),
    ("submit_time,ipus,duration\n0,4,-5\n", ":2: duration: '-5' is negative; give 0 or more"),
    ("submit_time,ipus,duration\n-5,4,10\n", ":2: submit_time: '-5' is negative; times on the trace's clock are"
     " seconds of 0 or more (Unix time will do): add one offset to every time"),
])
def test_a_native_job_of_0_ipus_more_than_the_pod_or_negative_times_is_refused(tmp_path, text, message):
    path = write(tmp_path, "t.csv", text)
    with pytest.raises(InvalidArgument) as error:
        simulate_trace(path, "bow-pod16", ["fifo"])
    assert error.value.message.startswith(path) and message in error.value.message


def test_utilisation_over_no_time_is_not_drawn():
    assert binned([5.0, 5.0], [8, 0], 200) == ([], []) and binned([5.0], [8], 200) == ([], [])


def test_percentiles_are_nearest_rank():
    """The smallest value with at least q of them at or below it. Two jobs' p50 was the longer one, and 20 jobs' p95
    their maximum: the index was one rank high whenever q x n was whole."""
    assert percentile([140, 100], 0.5) == 100 and percentile([100, 140, 60], 0.5) == 100
    assert percentile(list(range(1, 21)), 0.95) == 19 and percentile(list(range(1, 101)), 0.95) == 95
    assert percentile([7], 0.95) == 7 and percentile([], 0.5) is None
    two = replay([TraceJob(0, 16, 100, 128), TraceJob(10, 16, 50, 64)], POD16, "fifo")  # JCTs 100 and 140
    assert (two.p50_jct, two.p95_jct, two.avg_jct) == (100, 140, 120)


def test_a_count_that_is_not_whole_is_refused_as_such(tmp_path):
    path = write(tmp_path, "h.csv", "job_id,user,gpu_num,state,submit_time,duration\n1,u,1.5,COMPLETED,0,10\n")
    with pytest.raises(InvalidArgument, match=r"h.csv:2: gpu_num is '1.5', not a whole number; fix the row"):
        load_trace(path)


def test_a_trace_whose_every_row_is_skipped_says_so_not_which_formats_exist(tmp_path):
    path = write(tmp_path, "h.csv", "job_id,user,gpu_num,state,submit_time,duration\n1,u,2,COMPLETED,0,\n")
    with pytest.raises(InvalidArgument) as error:
        load_trace(path, max_ipus=16)
    assert error.value.message == (f"--trace {path} has no jobs to replay: every row was skipped (1 never ran (no"
                                   " duration)); docs/traces.md says which rows each format skips")


def test_poisson_arrivals_over_jobs_of_0_s_are_refused_not_divided_by_zero(tmp_path):
    from vipu.replay.arrivals import Draws

    path = write(tmp_path, "t.csv", "submit_time,ipus,duration\n0,4,0\n5,4,0\n")
    with pytest.raises(InvalidArgument, match=r"--arrivals poisson --load 0.8: every job of the trace runs 0 s, so"
                                              r" they offer no load at any arrival rate; give --runtimes"):
        simulate_trace(path, "bow-pod16", ["fifo"], draws=Draws("poisson"))
    drawn = simulate_trace(path, "bow-pod16", ["fifo"], draws=Draws("poisson", runtimes="exponential:60"))
    assert all(j.duration >= 1 for j in drawn.trace.jobs) and drawn.results[0].finished == 2
