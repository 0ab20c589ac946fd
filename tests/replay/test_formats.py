"""The trace formats besides native and openb-with-times: SWF (replayed and checked by hand), Helios, and openb pod
lists without times."""

from __future__ import annotations

import pytest

from tests.replay.samples import HELIOS, SWF, write_openb
from vipu.errors import InvalidArgument
from vipu.replay.arrivals import Draws
from vipu.replay.simulation import report, simulate_trace
from vipu.replay.summary import result_json
from vipu.replay.traces import load_trace


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_an_swf_log_replays_with_the_waits_and_bounded_slowdowns_worked_out_by_hand(tmp_path):
    sim = simulate_trace(write(tmp_path, "log.swf", SWF), "bow-pod16", ["fifo"])
    assert dict(sim.trace.skipped) == {"cancelled before it ran": 1, "no run time (-1)": 1,
                                       "partial runs (status 2-4; their job's own line is replayed)": 1,
                                       "larger than the Pod's largest partition": 1}
    jobs = {j.name: j for j in sim.runs[0][0].jobs}
    # swf1: 16 IPUs at 0 for 100 s. swf2 (3 processors -> 4 IPUs) at 10 and swf3 (requested 4) at 20 wait for it
    # under fifo and start together at 100
    assert {n: (j.ipus, j.start_time, j.end_time, j.wait_s) for n, j in jobs.items()} == {
        "swf1": (16, 0, 100, 0), "swf2": (4, 100, 105, 90), "swf3": (4, 100, 150, 80)}
    # bounded slowdown = max(1, (end - submit) / max(run, 10)): 100/100, 95/max(5, 10), 130/50
    assert {n: j.bounded_slowdown for n, j in jobs.items()} == {"swf1": 1, "swf2": 9.5, "swf3": 2.6}
    assert {n: j.slowdown for n, j in jobs.items()} == {"swf1": 1, "swf2": 19, "swf3": 2.6}
    assert [j.time_limit_s for j in jobs.values()] == [200, 60, 60]  # requested, requested, -1: 50 s -> 1 minute
    r = sim.results[0]
    assert r.avg_wait == pytest.approx(170 / 3) and r.avg_bsld == pytest.approx(13.1 / 3) and r.max_bsld == 9.5
    # users u1 (swf1, swf3: mean 1.8) and u2 (swf2: 9.5): Jain's index (1.8 + 9.5)^2 / (2 (1.8^2 + 9.5^2))
    assert r.fairness == pytest.approx(11.3 ** 2 / (2 * (1.8 ** 2 + 9.5 ** 2)))
    # one job waits from 10 s, two from 20 s, until 100 s, over a makespan of 150 s
    assert (r.avg_queue, r.max_queue) == (pytest.approx((10 + 2 * 80) / 150), 2)
    relaxed = simulate_trace(str(tmp_path / "log.swf"), "bow-pod16", ["fifo"], bsld_threshold=60).results[0]
    assert relaxed.max_bsld == pytest.approx(130 / 60) and relaxed.bsld_threshold == 60


def test_swf_processors_to_ipus_rules(tmp_path):
    path = write(tmp_path, "log.swf", SWF)
    assert [j.ipus for j in load_trace(path, max_ipus=16).jobs] == [16, 4, 4]  # next-pow2, the default
    halved = load_trace(path, max_ipus=16, swf_ipus="factor:0.5")
    assert [j.ipus for j in halved.jobs] == [8, 2, 2, 16] and "processors x 0.5" in halved.mapping
    scaled = load_trace(path, max_ipus=64, pod_ipus=64, swf_ipus="scale")  # MaxProcs 16 onto 64 IPUs: x 4
    assert [j.ipus for j in scaled.jobs] == [64, 16, 16] and "MaxProcs 16" in scaled.mapping
    with pytest.raises(InvalidArgument, match="--swf-ipus 'double' is not a rule; give next-pow2, factor:N"):
        load_trace(path, swf_ipus="double")
    no_header = write(tmp_path, "bare.swf", SWF.split("; Note")[1].split("\n", 1)[1])
    with pytest.raises(InvalidArgument, match="has no MaxProcs header comment"):
        load_trace(no_header, swf_ipus="scale")


@pytest.mark.parametrize("line, message", [
    ("1 0 0 10 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1\n", ":2: 17 fields, not SWF's 18"),
    ("1 0 0 ten 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n", ":2: field 4 (run_time) is 'ten', not a number"),
    ("1 0 0 nan 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n", ":2: field 4 (run_time) is 'nan', not a number"),
])
def test_a_bad_swf_line_is_named_by_file_and_line(tmp_path, line, message):
    path = write(tmp_path, "bad.swf", "; MaxProcs: 16\n" + line)
    with pytest.raises(InvalidArgument) as error:
        load_trace(path)
    assert error.value.message.startswith(path) and message in error.value.message


def test_a_helios_log_replays(tmp_path):
    trace = load_trace(write(tmp_path, "cluster_log.csv", HELIOS), max_ipus=64)
    assert dict(trace.skipped) == {"no GPU (CPU-only job)": 1, "cancelled before it ran": 1}
    start = trace.jobs[0].submit_time
    assert [(j.name, j.user, j.ipus, j.submit_time - start, j.duration) for j in trace.jobs] == [
        ("helios101", "uAlice", 4, 0, 600), ("helios103", "uBob", 8, 60, 60), ("helios105", "uAlice", 32, 180, 3600)]
    assert trace.mapping.startswith("Helios -> IPU-Pod mapping: IPUs = next power of two of gpu_num, x 4")
    r = simulate_trace(str(tmp_path / "cluster_log.csv"), "bow-pod64", ["fifo"]).results[0]
    assert (r.finished, r.max_wait, r.makespan) == (3, 0, 3780)
    bad = write(tmp_path, "bad.csv", HELIOS.replace("2020-06-09 18:42:01,2020", "yesterday,2020"))
    with pytest.raises(InvalidArgument, match=r"bad.csv:4: submit_time is 'yesterday', neither a date"):
        load_trace(bad)


def test_an_openb_pod_list_without_times_replays_once_its_times_are_drawn(tmp_path):
    path = str(write_openb(tmp_path / "openb_pod_list_multigpu50.csv", rows=300, timed=False))
    with pytest.raises(InvalidArgument, match="no arrival times .*give --arrivals poisson --load 0.8"):
        simulate_trace(path, "bow-pod64", ["fifo"])
    from vipu.replay.arrivals import Draws

    with pytest.raises(InvalidArgument, match="the trace has no run times; give --runtimes"):
        simulate_trace(path, "bow-pod64", ["fifo"], draws=Draws("poisson", 0.8))
    sim = simulate_trace(path, "bow-pod64", ["fifo"], draws=Draws("poisson", 0.8, "lognormal:6,1"), seed=3)
    assert sim.trace.mapping.startswith("openb pod list without times -> IPU-Pod mapping")
    assert "synthetic (seed 3): run times lognormal(mu=6, sigma=1) s" in sim.trace.mapping
    assert "arrivals Poisson in the trace's order at offered load 0.8" in sim.trace.mapping
    assert sim.results[0].finished == len(sim.trace.jobs) > 200


def test_runtimes_from_a_column_of_an_openb_list(tmp_path):
    path = write(tmp_path, "pods.csv", "name,num_gpu,gpu_milli,hours_s\np1,1,1000,100\np2,2,1000,300\np3,0,0,9\n")
    from vipu.replay.arrivals import Draws

    sim = simulate_trace(path, "bow-pod16", ["fifo"], draws=Draws("poisson", 0.5, "hours_s"))
    assert [(j.ipus, j.duration) for j in sim.trace.jobs] == [(4, 100), (8, 300)]
    assert "run time = column hours_s" in sim.trace.mapping
    with pytest.raises(InvalidArgument, match="--runtimes minutes: .* has no column 'minutes'"):
        simulate_trace(path, "bow-pod16", ["fifo"], draws=Draws("poisson", 0.5, "minutes"))


def test_ipus_per_gpu_maps_each_gpu_trace_and_is_refused_where_no_gpu_is_counted(tmp_path):
    """How much a result owes to "a GPU is an IPU-Machine's 4 IPUs" shows only if the factor can change."""
    openb = write(tmp_path, "o.csv", "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n"
                  "a,1,460,LS,0,10,0\nb,1,1000,LS,0,10,0\nc,3,1000,BE,0,10,0\nd,8,1000,LS,0,10,0\n")
    helios = write(tmp_path, "cluster_log.csv", HELIOS)
    assert [j.ipus for j in load_trace(openb).jobs] == [4, 4, 16, 32]
    one = load_trace(openb, ipus_per_gpu=1)
    assert [j.ipus for j in one.jobs] == [1, 1, 4, 8] and "x 1 IPU per GPU (--ipus-per-gpu 1)" in one.mapping
    assert [j.ipus for j in load_trace(helios, ipus_per_gpu=2).jobs] == [2, 4, 16]
    synthetic = simulate_trace(None, "bow-pod16", ["fifo"], synthetic=30, ipus_per_gpu=1)
    assert {j.ipus for j in synthetic.trace.jobs} <= {1, 2, 4, 8, 16} and "x 1 IPU per GPU" in synthetic.trace.mapping
    with pytest.raises(InvalidArgument, match="--ipus-per-gpu is 3; give a power of two"):
        load_trace(openb, ipus_per_gpu=3)
    with pytest.raises(InvalidArgument, match="--ipus-per-gpu: .*log.swf is no GPU trace .* --swf-ipus"):
        load_trace(write(tmp_path, "log.swf", SWF), ipus_per_gpu=1)


def test_the_waits_a_trace_recorded_are_the_baseline_beside_the_replay(tmp_path):
    """SWF's field 3, openb's scheduled_time - creation_time and Helios' start_time - submit_time: what the trace's
    own cluster made each job wait, reported beside the replay's waits; none once arrivals are compressed or drawn,
    since the recorded schedule no longer matches them."""
    swf = simulate_trace(write(tmp_path, "log.swf", SWF), "bow-pod16", ["fifo"])
    assert [j.trace_wait for j in swf.trace.jobs] == [3, 0, 0]
    assert result_json(swf.results[0], swf)["trace_waits"] == {"jobs": 3, "avg_wait_s": 1, "p95_wait_s": 3,
                                                               "max_wait_s": 3}
    assert report(swf).splitlines()[2] == ("the trace's own schedule, on its own cluster (not this Pod): 3 of 3 jobs"
                                           " with a recorded start; wait avg 1 s, p95 3 s, max 3 s (--jobs-out:"
                                           " trace_wait_s)")
    openb = write(tmp_path, "o.csv", "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n"
                  "a,1,1000,LS,100,500,130\nb,1,1000,LS,200,300,200\n")
    assert [j.trace_wait for j in load_trace(openb).jobs] == [30, 0]
    assert [j.trace_wait for j in load_trace(openb, compression=4).jobs] == [None, None]
    helios = load_trace(write(tmp_path, "cluster_log.csv", HELIOS), max_ipus=64)
    assert [j.trace_wait for j in helios.jobs] == [0, 0, 10]
    drawn = simulate_trace(openb, "bow-pod16", ["fifo"], draws=Draws("poisson", 0.5))
    assert result_json(drawn.results[0], drawn)["trace_waits"] is None and "own schedule" not in report(drawn)
