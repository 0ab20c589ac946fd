"""What a replay writes and draws: --jobs-out with `vipu history --json`'s names, --series-out, --plot, and the
figures over several seeds with their confidence intervals."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.cli_forks import run_script
from tests.conftest import console_script
from tests.replay.samples import SWF
from vipu.cli.job_detail import job_data
from vipu.cli.output import as_dict
from vipu.errors import InvalidArgument
from vipu.replay.arrivals import Draws, drawn
from vipu.replay.confidence import mean_and_halfwidth, t_quantile
from vipu.replay.measures import JOB_COLUMNS, from_history, jain
from vipu.replay.run import replay_run
from vipu.replay.simulation import report, simulate_trace
from vipu.replay.summary import seeds_json
from vipu.replay.trace_rows import Trace, TraceJob
from vipu.server.job_convert import job as job_message
from vipu.v1 import job_pb2

from tests.scheduler.builders import POD16

DERIVED = {"policy", "seed", "eligible_time", "wait_s", "total_wait_s", "run_time_s", "preemptions", "slowdown",
           "bounded_slowdown"}


def vipu(*args: str, cwd) -> subprocess.CompletedProcess:
    return run_script(console_script("vipu"), list(args), env=dict(os.environ), cwd=cwd, timeout=120)


def test_job_columns_are_the_job_messages_and_a_live_history_row_gives_the_same_figures():
    """--jobs-out's columns are the Job message's (what `vipu history --json` prints), first_ipu its detail_json's,
    and the rest are worked out from them: a history row of a job and the replay's row of it agree."""
    from_trace = {"trace_line", "trace_wait_s"}  # the trace's, which no history knows
    assert set(JOB_COLUMNS) - DERIVED - from_trace <= set(job_pb2.Job.DESCRIPTOR.fields_by_name) | {"first_ipu"}
    jobs = [TraceJob(0, 16, 600, 300, qos="low", user="a"), TraceJob(10, 8, 60, 120, qos="high", user="b"),
            TraceJob(20, 4, 30, 60, begin=50)]
    run = replay_run(jobs, POD16, "backfill")
    for record, figures in zip(run.records, run.jobs):
        assert from_history(job_data(job_message(record))) == figures  # as vipu history --json prints the job
        assert from_history(as_dict(job_message(record))) == figures  # as an older CLI printed it
    by_id = {j.id: j for j in run.jobs}
    assert (by_id[1].preemptions, by_id[1].requeue_count, by_id[1].state) == (1, 1, "TIMEOUT")
    assert by_id[3].eligible_time == 50 and by_id[3].wait_s == 0


def test_every_wait_of_a_preempted_job_adds_up_to_the_queue_length_integral():
    """wait_s is the last run's wait; total_wait_s adds the first too, so the jobs' waits add up to avg queue x
    makespan (Little's law). Regression: a preempted job's first wait was in no per-job figure."""
    jobs = [TraceJob(0, 16, 100, 128), TraceJob(10, 16, 600, 1024, qos="low"), TraceJob(150, 8, 60, 120, qos="high")]
    run = replay_run(jobs, POD16, "backfill")
    # the low job waits 10-100, runs 100-150, is preempted by the high job and waits again 150-210
    low = run.jobs[1]
    assert (low.preemptions, low.wait_s, low.total_wait_s) == (1, 60, 90 + 60)
    assert [j.total_wait_s for j in run.jobs] == [0, 150, 0]
    r = run.result
    assert sum(j.total_wait_s for j in run.jobs) == pytest.approx(r.avg_queue * r.makespan)
    for record, figures in zip(run.records, run.jobs):  # a live history row gives the same
        assert from_history(job_data(job_message(record))) == figures


def test_jobs_out_and_series_out_files(tmp_path):
    (tmp_path / "log.swf").write_text(SWF)
    out = vipu("simulate", "--trace", "log.swf", "--pod", "bow-pod16", "--policy", "fifo,sjf", "--jobs-out", "jobs.csv",
               "--series-out", "steps.jsonl", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "vipu: wrote jobs.csv (6 jobs)" in out.stderr and "vipu: wrote steps.jsonl (" in out.stderr
    with open(tmp_path / "jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == JOB_COLUMNS and [r["policy"] for r in rows] == ["fifo"] * 3 + ["sjf"] * 3
    assert rows[1]["name"] == "swf2" and rows[1]["wait_s"] == "90.0" and rows[1]["bounded_slowdown"] == "9.5"
    assert rows[1]["seed"] == "" and rows[1]["first_ipu"] == "0" and rows[1]["begin_time"] == ""
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    fifo = [(s["time"], s["used_ipus"], s["queued_jobs"]) for s in steps if s["policy"] == "fifo"]
    assert fifo == [(0, 16, 0), (10, 16, 1), (20, 16, 2), (100, 8, 0), (105, 4, 0), (150, 0, 0)]
    bad = vipu("simulate", "--trace", "log.swf", "--jobs-out", "jobs.txt", cwd=tmp_path)
    assert bad.returncode == 2 and "--jobs-out jobs.txt: name a .csv or .jsonl file" in bad.stderr


@pytest.mark.parametrize("name", ["replay.png", "replay.svg"])
def test_plot_draws_a_real_picture(tmp_path, name):
    out = vipu("simulate", "--synthetic", "200", "--pod", "bow-pod64", "--policy", "fifo,backfill", "--plot", name,
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = (tmp_path / name).read_bytes()
    if name.endswith(".png"):
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (1500, 450)
        import matplotlib.image

        pixels = matplotlib.image.imread(tmp_path / name)
        assert pixels.shape[:2] == (450, 1500) and pixels.std() > 0.05  # drawn on, not a blank page
    else:
        root = ET.fromstring(data)
        assert root.tag.endswith("svg") and (root.get("width"), root.get("height")) == ("1080pt", "324pt")
        paths = [e for e in root.iter() if e.tag.endswith("path")]
        assert len(paths) > 50  # axes, ticks and the policies' curves
        assert b"CDF of waits" in data or b"CDF" in data


def test_utilisation_is_plotted_as_means_over_equal_spans():
    from vipu.replay.plots import binned

    # 4 IPUs for 10 s, 2 for 20 s, then none: over spans of 10 s
    assert binned([0, 10, 30, 100], [4, 2, 0, 0], 10) == ([5 + 10 * k for k in range(10)], [4, 2, 2] + [0] * 7)
    middles, means = binned([0, 3, 7, 10], [1, 5, 2, 0], 2)  # (1 x 3 + 5 x 2) / 5, (5 x 2 + 2 x 3) / 5
    assert middles == [2.5, 7.5] and means == pytest.approx([2.6, 3.2])


def test_a_site_config_is_named_with_its_fields_beside_the_figures(tmp_path):
    """Two configs' results differ only in their figures unless the report says which config made them."""
    (tmp_path / "log.swf").write_text(SWF)
    (tmp_path / "site.yaml").write_text("policy: priority\nweights: {age: 0, job_size: 5000}\n")
    changed = {"policy": "priority", "weights": {"age": 0.0, "job_size": 5000.0}}
    text = vipu("simulate", "--trace", "log.swf", "--pod", "bow-pod16", "--scheduler-config", "site.yaml",
                cwd=tmp_path).stdout.splitlines()
    assert text[2] == ("scheduler config site.yaml; its fields not at their defaults (docs/job-spec.md): "
                       + json.dumps(changed))
    out = vipu("--json", "simulate", "--trace", "log.swf", "--pod", "bow-pod16", "--scheduler-config", "site.yaml",
               cwd=tmp_path)
    named = [row["scheduler_config"] for row in json.loads(out.stdout)]
    assert named == [{"file": "site.yaml", "non_default": changed}]
    built_in = vipu("--json", "simulate", "--trace", "log.swf", "--pod", "bow-pod16", "--policy", "fifo", cwd=tmp_path)
    assert [row["scheduler_config"] for row in json.loads(built_in.stdout)] == [None]


def test_a_site_configs_queue_caps_are_not_named_as_changes_the_replay_does_not_apply(tmp_path):
    """A replay lifts max_jobs and max_submit_jobs_per_user (every trace row was a submission its cluster took)."""
    (tmp_path / "log.swf").write_text(SWF)
    (tmp_path / "site.yaml").write_text("policy: priority\nmax_jobs: 2\nmax_submit_jobs_per_user: 1\n")
    out = vipu("--json", "simulate", "--trace", "log.swf", "--pod", "bow-pod16", "--scheduler-config", "site.yaml",
               cwd=tmp_path)
    assert [row["scheduler_config"] for row in json.loads(out.stdout)] == [
        {"file": "site.yaml", "non_default": {"policy": "priority"}}]


def test_plot_needs_a_png_or_svg_name(tmp_path):
    out = vipu("simulate", "--synthetic", "20", "--plot", "replay.jpg", cwd=tmp_path)
    assert out.returncode == 2 and "--plot replay.jpg: name a .png or .svg file" in out.stderr


def test_figures_over_seeds_are_means_with_student_t_intervals():
    sim = simulate_trace(None, "bow-pod64", ["fifo", "sjf"], synthetic=80, seed=4, seeds=3)
    assert sim.seeds == [4, 5, 6] and [len(runs) for runs in sim.runs] == [3, 3]
    waits = [run.result.avg_wait for run in sim.runs[0]]
    assert len(set(waits)) == 3  # each seed draws its own trace
    mean, half = mean_and_halfwidth(waits)
    sd = (sum((w - mean) ** 2 for w in waits) / 2) ** 0.5
    assert half == pytest.approx(4.303 * sd / 3 ** 0.5) and t_quantile(2) == 4.303
    data = seeds_json([run.result for run in sim.runs[0]], sim.seeds, sim)
    assert data["avg_wait_s"] == pytest.approx(mean) and data["ci95"]["avg_wait_s"] == pytest.approx(half)
    assert data["seeds"] == [4, 5, 6] and [s["seed"] for s in data["per_seed"]] == [4, 5, 6]
    again = simulate_trace(None, "bow-pod64", ["fifo"], synthetic=80, seed=5)
    assert again.results[0].avg_wait == waits[1]  # a seed's replay is repeatable


def test_policies_over_seeds_are_compared_seed_by_seed():
    """The third table and `paired`: each policy's figure minus the first's in the same seed, mean and Student's t
    half-width of those differences, which two overlapping intervals of the tables could not say."""
    sim = simulate_trace(None, "bow-pod64", ["fifo", "sjf"], synthetic=80, seed=4, seeds=3)
    fifo, sjf = ([run.result for run in runs] for runs in sim.runs)
    gains = [b.avg_wait - a.avg_wait for a, b in zip(fifo, sjf)]
    mean, half = mean_and_halfwidth(gains)
    paired = seeds_json(sjf, sim.seeds, sim, fifo)["paired"]
    assert paired["minus"] == "fifo" and paired["avg_wait_s"] == {"mean": pytest.approx(mean),
                                                                   "ci95": pytest.approx(half)}
    assert "paired" not in seeds_json(fifo, sim.seeds, sim)
    lines = report(sim).splitlines()
    assert lines[-3].startswith("paired over the seeds: each policy's figure minus fifo's in the same seed")
    row = lines[-1].split()  # minus fifo, avg JCT s, avg wait s, ...
    assert (row[0], row[2]) == ("sjf", f"{mean:+.0f}±{half:.0f}")
    assert "paired" not in report(simulate_trace(None, "bow-pod64", ["fifo", "sjf"], synthetic=80, seed=4))


def test_a_generated_trace_arrives_at_the_load_asked_for():
    light = simulate_trace(None, "bow-pod64", ["fifo"], synthetic=200, draws=Draws(load=0.2))
    assert "offered load 0.2 (" in light.trace.mapping and light.trace.synthetic
    heavy = simulate_trace(None, "bow-pod64", ["fifo"], synthetic=200, draws=Draws(load=2))
    assert heavy.results[0].avg_wait > light.results[0].avg_wait
    with pytest.raises(InvalidArgument, match="give --trace FILE .* or --synthetic N"):
        simulate_trace(None, "bow-pod64", ["fifo"])
    with pytest.raises(InvalidArgument, match="--synthetic draws its own arrivals and run times"):
        simulate_trace(None, "bow-pod64", ["fifo"], synthetic=10, draws=Draws("poisson"))


def test_seeds_need_something_drawn(tmp_path):
    (tmp_path / "log.swf").write_text(SWF)
    with pytest.raises(InvalidArgument, match="--seeds 3: this replay draws nothing at random"):
        simulate_trace(str(tmp_path / "log.swf"), "bow-pod16", ["fifo"], seeds=3)


def test_poisson_arrivals_offer_the_load_asked_for():
    jobs = [TraceJob(0, 4 * (1 + n % 4), 100 + 10 * n, 3600) for n in range(2000)]
    trace = drawn(Trace(jobs, "m"), Draws("poisson", 0.8), seed=1, pod_ipus=64)
    span = trace.jobs[-1].submit_time
    offered = sum(j.ipus * j.duration for j in trace.jobs) / (64 * span)
    assert offered == pytest.approx(0.8, rel=0.1) and trace.synthetic
    assert [j.duration for j in trace.jobs] == [j.duration for j in jobs]  # only arrivals drawn


def test_run_times_from_a_file_of_observed_ones(tmp_path):
    jobs = [TraceJob(0, 4, 1, 60) for _ in range(50)]
    for name, text in [("runs.txt", "30\n60\n90\n"), ("runs.csv", "run_time_s,x\n30,a\n60,b\n90,c\n"),
                       ("pods.csv", "name,deletion_time,scheduled_time\np,130,100\nq,160,100\nr,,\ns,190,100\n")]:
        (tmp_path / name).write_text(text)
        trace = drawn(Trace(jobs, "m"), Draws(runtimes=str(tmp_path / name)), seed=2, pod_ipus=16)
        assert {j.duration for j in trace.jobs} == {30, 60, 90} and "drawn from the 3 in" in trace.mapping
    with pytest.raises(InvalidArgument, match="is not a distribution; give lognormal:MU,SIGMA"):
        Draws(runtimes="lognormal:6").check()


def test_jain():
    assert jain([2, 2, 2]) == 1 and jain([1, 0, 0, 0]) == 0.25 and jain([]) is None
