"""Policy files in a replay: each row named so it can be told apart, a failure stopping the replay at once with its
file and line, and the API docs/traces.md documents working as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.scheduler.builders import POD16
from vipu.errors import InvalidArgument
from vipu.replay.result_files import job_rows
from vipu.replay.run import replay_run
from vipu.replay.simulation import simulate_trace
from vipu.replay.trace_rows import TraceJob

ROOT = Path(__file__).resolve().parents[2]
LARGEST_FIRST = ("from vipu.scheduler.policies import engine\nORDER = 'submit'\ndef schedule(request):\n"
                 "    return engine.run(request, sorted(request.pending, key=lambda j: (-j.ipus, j.id)), 'backfill')\n")


def write(folder: Path, name: str, text: str = LARGEST_FIRST) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return str(folder / name)


def test_rows_of_files_with_one_stem_or_a_built_in_name_are_named_by_their_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for folder, name in (("a", "x.py"), ("b", "x.py"), (".", "backfill.py"), (".", "ljf.py")):
        write(tmp_path / folder, name)
    sim = simulate_trace(None, "bow-pod64", ["backfill"], synthetic=20,
                         policy_files=["a/x.py", "b/x.py", "backfill.py", "ljf.py"])
    assert [r.policy for r in sim.results] == ["backfill", "a/x.py", "b/x.py", "backfill.py", "ljf"]
    assert {row["policy"] for row in job_rows(sim)} == {"backfill", "a/x.py", "b/x.py", "backfill.py", "ljf"}


def test_a_file_or_a_policy_given_twice_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "x.py")
    with pytest.raises(InvalidArgument, match=r"--policy-file ./x.py: the same file as --policy-file x.py; give each"):
        simulate_trace(None, "bow-pod64", [], synthetic=5, policy_files=["x.py", "./x.py"])
    with pytest.raises(InvalidArgument, match="--policy fifo is given twice; give each policy once"):
        simulate_trace(None, "bow-pod64", ["fifo", "fifo"], synthetic=5)


def test_a_policy_that_fails_stops_the_replay_at_once_with_its_file_and_line(tmp_path):
    """Once the replay ran every cycle, each decided by backfill, before refusing; a live controller still falls
    back (tests/scheduler/test_policy_file.py)."""
    calls = tmp_path / "calls"
    path = write(tmp_path, "wrong.py", "from vipu.scheduler import bits\nfrom vipu.scheduler.policies.base import"
                 " ScheduleDecision\ndef schedule(request):\n    jobs = list(request.pending)\n    if jobs:\n"
                 f"        open({str(calls)!r}, 'a').write('x')\n"
                 "        bits.best_fit(request.available_mask, jobs[0].ipus)\n    return ScheduleDecision()\n")
    jobs = [TraceJob(t, 4, 100, 128) for t in range(0, 500, 10)]
    with pytest.raises(InvalidArgument) as error:
        replay_run(jobs, POD16, "backfill", policy_file=path)
    assert calls.read_text() == "x"  # called once with a job, not once per cycle
    assert error.value.message.startswith(
        f"--policy-file wrong failed in its call 1: {path}:7: TypeError: best_fit() missing 1 required positional"
        " argument: 'size' (at time 0.000); fix the file")


def test_trace_line_maps_each_job_back_to_its_row(tmp_path):
    """Job ids follow submission; trace_line is the row's line in the file, whatever the order of its times."""
    trace = write(tmp_path, "t.csv", "submit_time,ipus,duration\n30,4,10\n0,4,10\n\n20,8,10\n0,16,10\n")
    sim = simulate_trace(trace, "bow-pod16", ["fifo"])
    rows = list(job_rows(sim))
    assert [(r["id"], r["submit_time"], r["ipus"], r["trace_line"]) for r in rows] == \
        [(1, 0, 4, 3), (2, 0, 16, 6), (3, 20, 8, 5), (4, 30, 4, 2)]
    generated = simulate_trace(None, "bow-pod64", ["fifo"], synthetic=30)
    assert all(r["name"] == f"synth{r['trace_line']}" for r in job_rows(generated))


def test_a_seed_given_to_a_replay_that_draws_nothing_is_refused(tmp_path):
    trace = write(tmp_path, "t.csv", "submit_time,ipus,duration\n0,4,10\n")
    for flags, flag in (({"seed": 5}, "--seed 5"), ({"seeds": 3}, "--seeds 3")):
        with pytest.raises(InvalidArgument, match=f"{flag}: this replay draws nothing at random .*, and --synthetic"
                                                  f" N's jobs: give one of those, or drop {flag.split()[0]}$"):
            simulate_trace(trace, "bow-pod16", ["fifo"], **flags)
    assert simulate_trace(trace, "bow-pod16", ["fifo"]).seeds == [None]


def test_the_documented_policy_from_scratch_replays_as_written(tmp_path):
    """docs/traces.md's example written against the API alone (bits.best_fit, Start, ScheduleDecision) is
    examples/policies/first_fit.py, and replays without a failure."""
    page = (ROOT / "docs/traces.md").read_text()
    [text] = re.findall(r"```python first_fit\.py\n(.*?)```", page, re.S)
    assert text == (ROOT / "examples/policies/first_fit.py").read_text()
    jobs = [TraceJob(0, 8, 100, 128), TraceJob(1, 16, 50, 64), TraceJob(2, 4, 10, 60), TraceJob(3, 4, 10, 60)]
    run = replay_run(jobs, POD16, "backfill", policy_file=str(ROOT / "examples/policies/first_fit.py"))
    # no reservation: the two small jobs start beside the first, the 16-IPU job waits for all three to end
    assert {j.id: (j.start_time, j.first_ipu) for j in run.jobs} == {1: (0, 0), 2: (100, 0), 3: (2, 8), 4: (3, 12)}
