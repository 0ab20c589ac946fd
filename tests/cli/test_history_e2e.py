"""`vipu history` as sacct lists runs (each job once, --duplicates every run, --limit the most recently ended), and
`vipu show job` of a large array in a fixed number of calls."""

from __future__ import annotations

import json
import re
import urllib.request

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for

QUICK = ("--ipus", "1", "--time-limit", "1m", "--duration", "0.2s")


def history(server, *args: str) -> list[tuple[int, str, float, float]]:
    out = run(server, "vipu", "history", "--json", *args)
    assert out.returncode == 0, out.stderr
    return [(x["id"], x["state"], x["start_time"], x["end_time"]) for x in json.loads(out.stdout)]


def test_a_job_requeued_after_completing_is_one_row_and_limit_takes_the_latest_ended(server):
    """Regression: -s CD listed job 48 twice where plain history listed it once, and --limit 1 gave the highest
    job id rather than the job that ended last. Rows by job id, as sacct lists them."""
    [again] = submit(server, *QUICK)
    wait_for(lambda: show(server, again)["state"] == "COMPLETED")
    first_run = show(server, again)
    [other] = submit(server, *QUICK)  # a higher id, ended before again's second run
    wait_for(lambda: show(server, other)["state"] == "COMPLETED")
    assert run(server, "vipu", "requeue", str(again)).returncode == 0
    wait_for(lambda: show(server, again)["state"] == "COMPLETED" and show(server, again)["requeue_count"] == 1)
    second_run = show(server, again)

    rows = history(server)
    assert [(i, state) for i, state, *_ in rows] == [(again, "COMPLETED"), (other, "COMPLETED")]  # by job id
    assert rows[0][2:] == (second_run["start_time"], second_run["end_time"])
    assert history(server, "-s", "CD") == rows
    every = history(server, "-D", "-s", "CD")
    assert [(i, start, end) for i, _, start, end in every if i == again] == [
        (again, first_run["start_time"], first_run["end_time"]), (again, second_run["start_time"], second_run["end_time"])]
    assert history(server, "--limit", "1") == rows[:1]  # the latest ended
    assert [i for i, *_ in history(server, "-D", "--limit", "2")] == [again, other]
    table = run(server, "vipu", "history", "--limit", "1", "--no-header").stdout.splitlines()
    assert [line.split("|")[0].strip() for line in table] == [str(again)]

    out = run(server, "vipu", "requeue", "--hold", str(other))  # scontrol requeuehold: one call
    assert out.returncode == 0 and out.stdout.startswith(f"Job {other} requeued and held: PENDING"), out.stderr
    held = show(server, other)
    assert held["held"] and held["reason"] == "JobHeldUser" and held["requeue_count"] == 1
    assert run(server, "vipu", "release", str(other)).returncode == 0
    wait_for(lambda: show(server, other)["state"] == "COMPLETED")


def requests(server) -> dict[str, float]:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as reply:
        text = reply.read().decode()
    found = re.findall(r'grpc_server_handled_total\{grpc_code="OK",grpc_method="(\w+)",'
                       r'grpc_service="vipu.v1.JobService",grpc_type="unary"\} (\S+)', text)
    return {method: float(count) for method, count in found}


def test_submit_wait_on_an_array_asks_once_a_pass_for_every_task(server):
    """sbatch -W of an array: a GetJob per task each pass was thousands of calls a pass for a large array."""
    before = requests(server)
    out = run(server, "vipu", "submit", "-W", "--parsable", "--ipus", "1", "--duration", "0.3s", "--array", "0-39")
    calls = {m: n - before.get(m, 0) for m, n in requests(server).items() if n != before.get(m, 0)}
    assert out.returncode == 0, out.stderr
    first = int(out.stdout)
    tasks = history(server, "-j", str(first))
    assert len(tasks) == 40 and {state for _, state, *_ in tasks} == {"COMPLETED"}  # every task ended first
    assert "GetJob" not in calls and 1 <= calls["History"] < 40, calls  # a listing a pass, not a call a task


def test_show_job_of_an_array_lists_every_task_in_three_calls(server):
    """A GetJob per task took one call per task: thousands for a large array."""
    tasks = submit(server, "--ipus", "1", "--time-limit", "1m", "--hold", "--array", "0-299")
    assert run(server, "vipu", "cancel", f"{tasks[0]}_[0-9]").returncode == 0  # ended tasks are listed too
    before = requests(server)
    whole = run(server, "vipu", "show", "job", str(tasks[0]))
    after = requests(server)
    assert whole.returncode == 0 and whole.stdout.count("\nArrayJobId=") == 300
    assert [b.split("\n")[0] for b in whole.stdout.split("\n\n")] == [f"JobId={tasks[0]}_{t}" for t in range(300)]
    assert whole.stdout.count("JobState=CANCELLED") == 10
    calls = {m: after[m] - before.get(m, 0) for m in after if after[m] != before.get(m, 0)}
    assert calls == {"GetJob": 1, "ListJobs": 1, "History": 1}


def test_history_and_show_job_give_a_job_one_json_shape(server, tmp_path):
    """Regression: `vipu history --json` gave the spec and detail as protobuf's JSON (with spec_json and
    detail_json texts) where `vipu show job --json` gave them as the mappings they stand for, and history rows'
    keys varied with the job (a priority, a run)."""
    script = tmp_path / "hello.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    ids = [*submit(server, *QUICK), *submit(server, "--ipus", "1", "-t", "1", str(script)),
           *submit(server, "--ipus", "1", "-t", "1", "--array", "0-1", "--duration", "0.2s")]
    wait_for(lambda: all(show(server, i)["state"] == "COMPLETED" for i in ids))
    out = run(server, "vipu", "history", "--json")
    assert out.returncode == 0, out.stderr
    every = json.loads(out.stdout)
    assert len({frozenset(x) for x in every}) == 1  # the same keys on every row
    assert all(x["training"] is None for x in every)  # a listing of every job reads no runs: -j does
    out = run(server, "vipu", "history", "--json", "-j", ",".join(map(str, ids)))
    rows = {x["id"]: x for x in json.loads(out.stdout)}
    assert len({frozenset(x) for x in rows.values()}) == 1
    for i in ids:
        shown = show(server, i)
        shown.pop("tasks", None)  # an array's id in show job: each task besides
        assert rows[i] == shown, i
    row = rows[ids[0]]
    assert not {"spec_json", "detail_json", "result_json"} & set(row)
    assert row["spec"]["workload"] == {"kind": "sleep", "duration": 0.2, "exit_code": 0}
    assert row["spec"]["begin"] is None and "priority" in row["detail"]
    assert isinstance(row["detail"]["history"][0]["at"], float) and row["ended"].endswith("Z")
    assert rows[ids[1]]["training"]["output"] and rows[ids[1]]["ipu_usage"] == []
    held = run(server, "vipu", "hold", "--json", str(submit(server, *QUICK, "--hold")[0]))
    assert held.returncode == 0, held.stderr
    assert [set(x) for x in json.loads(held.stdout)] == [set(row)]  # the same shape again
