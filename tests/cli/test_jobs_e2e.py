"""The job commands end to end: `vipu submit` to `vipu history` through the installed CLI and a live controller."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.cli_forks import run_script
from tests.cli.test_cli_e2e import run
from tests.conftest import console_script
from vipu.validation import MAX_SPEC_BYTES


def submit(server, *args: str) -> list[int]:
    out = run(server, "vipu", "submit", "--json", *args)
    assert out.returncode == 0, out.stderr
    return [int(i) for i in json.loads(out.stdout)["job_ids"]]


def jobs(server, *args: str) -> dict[int, dict]:
    """The queue as squeue --json shapes it: each job by its job_id, with Slurm's field names."""
    out = run(server, "vipu", "queue", "--json", *args)
    assert out.returncode == 0, out.stderr
    return {x["job_id"]: x for x in json.loads(out.stdout)["jobs"]}


def show(server, job: int) -> dict:
    out = run(server, "vipu", "show", "job", str(job), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_submit_run_complete_and_history(server):
    text = run(server, "vipu", "submit", "--name", "quick", "--ipus", "16", "--time-limit", "10m", "--duration", "4s")
    assert text.returncode == 0 and text.stdout == "Submitted batch job 1\n"  # sbatch's line: awk '{print $4}'
    running = wait_for(lambda: show(server, 1)["state"] == "RUNNING" and show(server, 1))
    assert running["partition"] == "slurm_1"
    partitions = json.loads(run(server, "vipu", "list", "partitions", "--json").stdout)
    assert [(p["name"], p["size"], p["holder"]) for p in partitions] == [("slurm_1", 16, "job 1")]
    wait_for(lambda: show(server, 1)["state"] == "COMPLETED")
    assert json.loads(run(server, "vipu", "list", "partitions", "--json").stdout) == []
    history = run(server, "vipu", "history")
    assert history.returncode == 0
    header, row = history.stdout.splitlines()[:2]
    assert header.split("|")[0].strip() == "JobID"
    assert [c.strip() for c in row.split("|")][:5] == ["1", "quick", row.split("|")[2].strip(), "COMPLETED", "0:0"]


def test_pending_reasons_holds_dependencies_and_cancel(server, tmp_path):
    [big] = submit(server, "--name", "fill", "--ipus", "64", "--time-limit", "10m")  # a hold workload: runs until cancelled
    wait_for(lambda: jobs(server)[big]["job_state"] == ["RUNNING"])
    [waiting] = submit(server, "--name", "next", "--ipus", "32", "--time-limit", "5m", "--duration", "1s")
    [held] = submit(server, "--name", "held", "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "--hold")
    [after] = submit(server, "--name", "after", "--ipus", "1", "--time-limit", "1m", "--duration", "1s",
                     "--dependency", f"afterok:{waiting}")
    queue = wait_for(lambda: (q := jobs(server))[waiting]["state_reason"] != "None" and q)
    assert queue[waiting]["state_reason"] == "Resources" and queue[waiting]["start_time"]["set"]  # its estimate
    assert queue[held]["state_reason"] == "JobHeldUser" and queue[after]["state_reason"] == "Dependency"
    table = run(server, "vipu", "queue").stdout
    assert "(JobHeldUser)" in table and "(Dependency)" in table and "slurm_" in table

    assert run(server, "vipu", "release", str(held)).returncode == 0
    cancelled = run(server, "vipu", "cancel", str(big))
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout
    wait_for(lambda: show(server, after)["state"] == "COMPLETED")
    assert show(server, big)["state"] == "CANCELLED" and show(server, held)["state"] == "COMPLETED"
    again = run(server, "vipu", "cancel", str(big))
    assert again.returncode == 4 and "CANCELLED" in again.stderr


def test_spec_file_with_overrides(server, tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text("name: from-file\nipus: 8\ntime_limit: 2m\nworkload: {kind: sleep, duration: 30s}\n")
    [job] = submit(server, str(spec), "--hold", "--name", "renamed")
    detail = show(server, job)
    assert detail["name"] == "renamed" and detail["held"] and detail["ipus"] == 8 and detail["time_limit_s"] == 120
    assert detail["spec"]["workload"] == {"kind": "sleep", "duration": 30.0, "exit_code": 0}


@pytest.mark.parametrize(
    "content, words",
    [
        ("name: x\nipus: 4\ncolour: blue\n", ["colour", "unknown field"]),
        ("ipus: 6\ntime_limit: 1m\n", ["ipus", "power of two"]),
        ("ipus: 128\ntime_limit: 1m\n", ["ipus", "64"]),
        ("ipus: 4\ntime_limit: 0\n", ["time_limit"]),
        ("ipus: 4\ntime_limit: -5m\n", ["time_limit"]),
        ("ipus: 4\narray: 5-2\n", ["array"]),
        ("ipus: 4\narray: 0-1000000000\n", ["array"]),
        ("ipus: 4\ndependency: afterok:999\n", ["999"]),
        ("- just\n- a list\n", ["mapping"]),
    ],
)
def test_bad_specs_are_refused_with_the_field_and_nothing_is_queued(unchanged_server, tmp_path, content, words):
    spec = tmp_path / "bad.yaml"
    spec.write_text(content)
    out = run(unchanged_server, "vipu", "submit", str(spec))
    assert out.returncode == 2, (out.stdout, out.stderr)
    line = out.stderr.strip()
    assert line.startswith("vipu: error: ") and "\n" not in line
    for word in words:
        assert word in line
    assert jobs(unchanged_server) == {} and json.loads(run(unchanged_server, "vipu", "history", "--json").stdout) == []


def test_binary_and_oversized_specs(unchanged_server, tmp_path):
    server = unchanged_server  # refused: nothing is queued
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    out = run(server, "vipu", "submit", str(garbage))  # walk40: said as sbatch says it, not a batch script
    assert out.returncode == 2 and "This does not look like a batch script" in out.stderr, out.stderr
    (tmp_path / "garbage.yaml").write_bytes(bytes(range(256)) * 4)  # named a spec: the controller names the byte
    out = run(server, "vipu", "submit", str(tmp_path / "garbage.yaml"))
    assert out.returncode == 2 and "UTF-8" in out.stderr
    for text, said in (("", "Batch script is empty!"), (" \n\t\n", "Batch script contains only whitespace!")):
        (tmp_path / "job.sh").write_text(text)  # sbatch's words
        out = run(server, "vipu", "submit", str(tmp_path / "job.sh"))
        assert out.returncode == 2 and out.stderr.startswith(f"vipu: error: {tmp_path}/job.sh: {said}"), out.stderr
    huge = tmp_path / "huge.yaml"
    huge.write_text("ipus: 4\n#" + "x" * 10_000_000 + "\n")
    out = run(server, "vipu", "submit", str(huge))
    assert out.returncode == 2 and "at most 1 MB" in out.stderr
    piped = subprocess.run([console_script("vipu"), "submit", "-"], input=huge.read_bytes(), capture_output=True,
                           env=server.env(), timeout=60)  # it said "1048577 bytes", all it had read of 10 MB
    assert piped.returncode == 2 and b"on stdin is more than 1 MB" in piped.stderr
    assert jobs(server) == {}


def test_info_and_priority(server):
    submit(server, "--ipus", "64", "--time-limit", "10m")
    [pending] = submit(server, "--ipus", "16", "--time-limit", "10m", "--qos", "high")
    wait_for(lambda: jobs(server)[pending]["state_reason"] != "None")
    info = json.loads(run(server, "vipu", "info", "--json").stdout)
    assert info["ilds"][0]["allocated"] == 64 and info["ilds"][0]["idle"] == 0
    rows = json.loads(run(server, "vipu", "priority", "--json").stdout)
    assert [int(r["job_id"]) for r in rows] == [pending] and rows[0]["qos"] > 0
    listed = jobs(server)  # squeue -o %Q: a pending job's priority, as sprio totals it (it was 0.0)
    assert abs(listed[pending]["priority"]["number"] - rows[0]["priority"]) < 0.01 * rows[0]["priority"]
    array = submit(server, "--ipus", "16", "--time-limit", "10m", "--array", "0-1")[0]
    text = run(server, "vipu", "priority", "--no-header").stdout  # array tasks as N_T, as squeue shows them
    assert [line.split()[0] for line in text.splitlines()] == [str(pending), f"{array}_0", f"{array}_1"], text
    requeue = run(server, "vipu", "requeue", f"{array}_1")
    assert requeue.returncode == 4 and f"job {array}_1 is already PENDING" in requeue.stderr


def test_sigkill_keeps_the_queue_and_resumes_running_jobs(server):
    # long enough to outlast a restart on a loaded machine (at 4 s it had ended, and the array too, when the
    # restarted controller was first asked)
    [running] = submit(server, "--name", "long", "--ipus", "64", "--time-limit", "10m", "--duration", "12s")
    wait_for(lambda: jobs(server)[running]["job_state"] == ["RUNNING"])
    pending = submit(server, "--name", "later", "--ipus", "4", "--time-limit", "1m", "--duration", "1s", "--array", "0-2")
    before = jobs(server)
    server.kill(signal.SIGKILL)
    server.start()
    after = jobs(server)
    assert set(after) == set(before) == {running, *pending}
    assert after[running]["job_state"] == ["RUNNING"] and after[running]["start_time"] == before[running]["start_time"]
    wait_for(lambda: all(show(server, j)["state"] == "COMPLETED" for j in (running, *pending)), timeout=60)
    [nxt] = submit(server, "--ipus", "1", "--time-limit", "1m")
    assert nxt > max(pending)  # ids are never handed out twice


def test_a_failed_link_ends_its_job_node_fail_and_requeues_it_elsewhere(server):
    [job] = submit(server, "--name", "ring", "--ipus", "8", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[job]["job_state"] == ["RUNNING"])
    not_linked = run(server, "vipu-admin", "fail", "link", "0", "2")
    assert not_linked.returncode == 2 and "not joined by an IPU-Link" in not_linked.stderr
    assert run(server, "vipu-admin", "fail", "link", "0", "1").returncode == 0
    moved = wait_for(lambda: (d := show(server, job))["state"] == "RUNNING" and d["requeue_count"] == 1 and d)
    assert moved["detail"]["first_ipu"] >= 8 and "NODE_FAIL" in [h["state"] for h in moved["detail"]["history"]]
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert [i["state"] for i in ipus[:3]] == ["failed", "failed", "idle"]


def test_begin_time_waits_with_reason_begintime_then_runs(server):
    # the displays on a begin far enough away that a loaded machine cannot reach it first
    [later] = submit(server, "--name", "later", "--ipus", "1", "--time-limit", "1m", "--begin", "now+1h")
    detail = show(server, later)
    assert detail["state"] == "PENDING" and detail["reason"] == "BeginTime"
    assert abs(detail["begin_time"] - (detail["submit_time"] + 3600)) < 1e-6
    assert detail["estimated_start"] >= detail["begin_time"] and detail["spec"]["begin"] == "now+3600"
    assert "(BeginTime)" in run(server, "vipu", "queue").stdout
    text = run(server, "vipu", "show", "job", str(later)).stdout
    assert "Reason=BeginTime" in text and "BeginTime=" in text and "BeginTime=None" not in text
    assert "FirstIPU=(null)\n" in text  # not placed yet: no Python None, as Slurm's NodeList=(null)
    run(server, "vipu", "cancel", str(later))
    [plain] = submit(server, "--ipus", "1", "--time-limit", "1m", "--hold")
    text = run(server, "vipu", "show", "job", str(plain)).stdout
    assert "BeginTime=Unknown\n" in text and "=None\n" not in text.replace("Reason=None\n", "")
    run(server, "vipu", "cancel", str(plain))
    # the wake-up: a begin two seconds away starts within a step of it
    [job] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "--begin", "now+2s")
    running = wait_for(lambda: (d := show(server, job))["state"] in ("RUNNING", "COMPLETED") and d, timeout=10)
    assert abs(running["begin_time"] - (running["submit_time"] + 2)) < 1e-6
    assert running["start_time"] >= running["begin_time"]
    # not held a whole cycle longer; the exact wake-up is test_the_driver_wakes_at_the_earliest_begin_time's
    assert running["start_time"] - running["begin_time"] < 5.0
    wait_for(lambda: show(server, job)["state"] == "COMPLETED")

    bad = run(server, "vipu", "submit", "--ipus", "1", "--begin", "soon")
    assert bad.returncode == 2 and "-b/--begin: 'soon' is not a time" in bad.stderr and "now+" in bad.stderr
    [past] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "--begin", "2001-01-01T00:00:00Z")
    wait_for(lambda: show(server, past)["state"] == "COMPLETED")  # a begin in the past: eligible at once

    # without --secure every caller is an admin, but the kind of hold is still asked for explicitly
    [held] = submit(server, "--ipus", "1", "--time-limit", "1m", "--begin", "now+1h")
    out = run(server, "vipu", "hold", str(held))
    assert out.returncode == 0 and out.stdout.strip() == f"Job {held} held: PENDING (held)"
    assert show(server, held)["reason"] == "JobHeldUser"
    out = run(server, "vipu", "hold", "--admin", str(held))
    assert out.returncode == 0 and "held by an admin" in out.stdout
    assert show(server, held)["reason"] == "JobHeldAdmin" and show(server, held)["admin_hold"]
    assert "Held=yes (admin)" in run(server, "vipu", "show", "job", str(held)).stdout
    assert run(server, "vipu", "release", str(held)).returncode == 0  # an admin releases it
    assert show(server, held)["reason"] == "BeginTime"


def test_admin_hold_needs_an_admin_to_release_and_survives_a_restart(server_factory):
    server = server_factory(extra=["--secure"])
    admin_key = (server.state_dir / "admin.key").read_text().strip()

    def as_(key: str) -> dict:
        return {**server.env(), "VIPU_CLI_API_ACCESS_KEY": key}

    created = run(server, "vipu-admin", "create", "user", "alice", "--json", env=as_(admin_key))
    assert created.returncode == 0, created.stderr
    alice = as_(json.loads(created.stdout)["access_key"])
    out = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "--hold", "--json",
              env=alice)
    assert out.returncode == 0, out.stderr
    [job] = json.loads(out.stdout)["job_ids"]

    def reason(env) -> str:
        out = run(server, "vipu", "show", "job", str(job), "--json", env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["reason"]

    assert reason(alice) == "JobHeldUser"
    other = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "--hold", "--json", env=alice)
    [other] = json.loads(other.stdout)["job_ids"]
    denied = run(server, "vipu", "hold", "--admin", str(job), str(other), env=alice)  # refused once, not per id
    assert denied.returncode == 6 and denied.stderr.count("\n") == 1
    assert "not an admin" in denied.stderr and "drop admin (--admin)" in denied.stderr
    assert run(server, "vipu", "hold", "--admin", str(job), env=as_(admin_key)).returncode == 0
    assert reason(alice) == "JobHeldAdmin"

    server.kill(signal.SIGKILL)  # the hold is in the store
    server.start()
    assert reason(alice) == "JobHeldAdmin"
    refused = run(server, "vipu", "release", str(job), env=alice)
    assert refused.returncode == 6, refused.stderr
    assert "held by an admin (JobHeldAdmin); only an admin may release it" in refused.stderr
    assert reason(alice) == "JobHeldAdmin"
    assert run(server, "vipu", "release", str(job), env=as_(admin_key)).returncode == 0
    wait_for(lambda: json.loads(run(server, "vipu", "show", "job", str(job), "--json", env=alice).stdout)["state"]
             == "COMPLETED")


def test_a_running_jobs_partition_is_removed_only_by_cancelling_the_job(server):
    """Regression: remove --force took slurm_1 away while job 1 stayed RUNNING, and its IPUs went to the next
    partition; a reset carried on under the job."""
    [job] = submit(server, "--name", "fill", "--ipus", "64", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[job]["job_state"] == ["RUNNING"])
    for verb in ("remove", "reset"):
        refused = run(server, "vipu", verb, "partition", f"slurm_{job}")
        assert refused.returncode == 4 and f"partition slurm_{job} belongs to running job {job}" in refused.stderr
        assert f"`vipu cancel {job}`" in refused.stderr and jobs(server)[job]["job_state"] == ["RUNNING"]
    forced = run(server, "vipu", "remove", "partition", f"slurm_{job}", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout == f"Partition slurm_{job} removed (64 IPUs freed); job {job} cancelled\n"  # not silently
    assert show(server, job)["state"] == "CANCELLED"
    why = f"its partition slurm_{job} was removed (vipu remove partition --force)"  # not a user's cancel
    assert show(server, job)["detail"]["ended_by"] == why
    assert f"\nEndedBy={why}\n" in run(server, "vipu", "show", "job", str(job)).stdout
    assert run(server, "vipu", "create", "partition", "after", "--size", "64").returncode == 0

    # an array's first task has the array's own id: removing its partition ends that task, not every task
    first, second = submit(server, "--name", "pair", "--ipus", "1", "--time-limit", "10m", "--array", "0-1")
    assert run(server, "vipu", "remove", "partition", "after", "--force").stdout == \
        "Partition after removed (64 IPUs freed)\n"  # no job's: none cancelled
    wait_for(lambda: {show(server, i)["state"] for i in (first, second)} == {"RUNNING"})
    refused = run(server, "vipu", "remove", "partition", f"slurm_{first}")
    assert f"`vipu cancel {first}_0`" in refused.stderr
    forced = run(server, "vipu", "remove", "partition", f"slurm_{first}", "--force")
    assert forced.stdout == f"Partition slurm_{first} removed (1 IPU freed); job {first}_0 cancelled\n"
    assert (show(server, first)["state"], show(server, second)["state"]) == ("CANCELLED", "RUNNING")


def test_a_relative_output_is_made_absolute_where_vipu_submit_runs(server, tmp_path):
    (tmp_path / "job.yaml").write_text("name: rel\nipus: 1\ntime_limit: 1m\noutput: logs/%x-%j.out\n"
                                       "workload: {kind: sleep, duration: 0.1}\n")
    (tmp_path / "logs").mkdir()  # as sbatch, a missing directory would fail the job
    def submit_here(*args: str) -> int:
        out = run_script(console_script("vipu"), ["submit", "--json", *args], env=server.env(), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return int(json.loads(out.stdout)["job_ids"][0])

    from_spec = submit_here("job.yaml")
    from_flag = submit_here("--name", "flag", "--ipus", "1", "--duration", "0.1s", "--output", "flag-%j.out")
    written = [tmp_path / "logs" / f"rel-{from_spec}.out", tmp_path / f"flag-{from_flag}.out"]
    wait_for(lambda: all(f.exists() for f in written))
    assert "COMPLETED" in written[0].read_text()
    text = run(server, "vipu", "show", "job", str(from_spec)).stdout
    assert f"StdOut={written[0]}\n" in text and "Nice=0\n" in text  # the pattern filled in, as scontrol's


def test_pending_array_tasks_share_a_queue_line_as_in_squeue(server):
    [first, *_] = submit(server, "--name", "sweep", "--ipus", "1", "--time-limit", "1m", "--array", "0-9", "--hold")
    run(server, "vipu", "release", f"{first}_3")  # task 3 runs; tasks 0-2 and 4-9 still wait, held
    wait_for(lambda: show(server, first + 3)["state"] == "RUNNING")
    text = run(server, "vipu", "queue", "--no-header").stdout.splitlines()
    assert [line.split()[0] for line in text] == [f"{first}_3", f"{first}_[0-2,4-9]"]
    assert "(JobHeldUser)" in text[1]
    expanded = run(server, "vipu", "queue", "-r", "--no-header").stdout.splitlines()
    assert len(expanded) == 10 and len(jobs(server)) == 10  # -r and --json: a line each


def test_a_throttled_array_shows_its_limit_as_in_squeue(server):
    """squeue prints a pending array with its %N limit (26_[2-5%2]); `vipu queue` dropped it."""
    [first, *_] = submit(server, "--name", "sweep", "--ipus", "1", "--time-limit", "1m", "--array", "0-5%2")
    wait_for(lambda: sorted(x["job_state"][0] for x in jobs(server).values()).count("RUNNING") == 2)
    text = run(server, "vipu", "queue", "--no-header", "-t", "PD").stdout.split()
    assert text[0] == f"{first}_[2-5%2]", text
    assert run(server, "vipu", "queue", "--no-header", "-o", "%i", "-t", "PD").stdout.split() == [f"{first}_[2-5%2]"]


def test_a_retried_submit_says_it_queued_nothing(server):
    first = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--request-id", "abc1")
    again = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--request-id", "abc1")
    assert first.stdout == again.stdout == "Submitted batch job 1\n"  # as sbatch's, for a script's awk
    assert again.stderr == "vipu: request id abc1 was used before: that submit's jobs, not queued again\n"


def test_json_rows_of_a_listing_have_the_same_keys(server):
    """A field not set (a start time of a job that never ran, the task id of a job that is no array's) is null, not
    left out: `history --json` had four different key sets. `queue --json` has squeue's shape: every job the same
    keys, and a number that may be unset as {"set", "infinite", "number"}."""
    [plain] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0s")
    submit(server, "--ipus", "1", "--time-limit", "1m", "--array", "0-1", "--hold")
    wait_for(lambda: show(server, plain)["state"] == "COMPLETED")
    ended = json.loads(run(server, "vipu", "history", "--json").stdout)
    queued = list(jobs(server).values())
    assert len(ended) == 1 and len(queued) == 2 and len({tuple(sorted(x)) for x in queued}) == 1
    [row] = ended
    assert row["id"] == plain and row["array_job_id"] is None and row["start_time"] is not None
    assert row["estimated_start"] is None
    # ids are JSON numbers, as squeue --json's job_id (protobuf's own mapping writes 64-bit integers as strings)
    assert {(x["array_job_id"]["number"], x["array_task_id"]["number"]) for x in queued} == {(plain + 1, 0),
                                                                                            (plain + 1, 1)}
    assert all(x["array_job_id"]["set"] and not x["start_time"]["set"] for x in queued)  # held: no estimate
    submitted = json.loads(run(server, "vipu", "submit", "--ipus", "1", "--hold", "--json").stdout)
    assert submitted == {"job_ids": [plain + 3], "duplicate": False,
                         "jobs": [{"job_ids": [plain + 3], "duplicate": False}]}


def test_parsable_submit_prints_the_id_alone(server):
    """sbatch --parsable, for jid=$(...): the id, or an array's id, which names every task."""
    first = run(server, "vipu", "submit", "--parsable", "--ipus", "1", "--hold", "--array", "0-2", "--request-id", "p1")
    assert first.returncode == 0 and first.stderr == ""
    array = int(first.stdout)
    assert first.stdout == f"{array}\n"
    tasks = [x["array_task_id"]["number"] for x in jobs(server).values() if x["array_job_id"]["number"] == array]
    assert sorted(tasks) == [0, 1, 2]
    again = run(server, "vipu", "submit", "--parsable", "--ipus", "1", "--hold", "--array", "0-2", "--request-id", "p1")
    assert again.stdout == f"{array}\n" and "not queued again" in again.stderr
    out = run(server, "vipu", "cancel", again.stdout.strip())
    assert out.returncode == 0 and "3 tasks cancelled" in out.stdout


def test_several_spec_files_are_queued_in_one_call_all_or_none(server, tmp_path):
    names = []
    for name, ipus in (("a", 1), ("b", 4), ("c", 2)):
        (tmp_path / f"{name}.yaml").write_text(f"name: {name}\nipus: {ipus}\ntime_limit: 1m\n")
        names.append(str(tmp_path / f"{name}.yaml"))
    (tmp_path / "bad.yaml").write_text("name: bad\nipus: 3\ntime_limit: 1m\n")
    refused = run(server, "vipu", "submit", names[0], str(tmp_path / "bad.yaml"), names[1], "--hold")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith(f"vipu: error: spec 2 of 3 ({tmp_path}/bad.yaml): ipus")
    assert "nothing was queued" in refused.stderr and jobs(server) == {}
    (tmp_path / "big.yaml").write_bytes(b"#" * (MAX_SPEC_BYTES + 1))
    unreadable = run(server, "vipu", "submit", names[0], str(tmp_path / "missing.yaml"), str(tmp_path / "big.yaml"))
    assert unreadable.returncode == 2 and unreadable.stdout == "" and jobs(server) == {}
    assert unreadable.stderr.splitlines() == [  # every file that cannot be sent, named as the controller names specs
        f"vipu: error: spec 2 of 3: job spec {tmp_path}/missing.yaml does not exist or is not a file; give the path of"
        " a batch script or a YAML or JSON spec; nothing was queued",
        f"vipu: error: spec 3 of 3: job spec {tmp_path}/big.yaml is 1,048,577 bytes; a spec may be at most 1 MB"
        " (1,048,576 bytes): keep data in files it names; nothing was queued"]
    text = run(server, "vipu", "submit", *names, "--hold", "--array", "0-1", "--request-id", "many")
    assert text.stdout == "Submitted batch job 1\nSubmitted batch job 3\nSubmitted batch job 5\n"  # sbatch's
    assert text.stderr == "".join(f"vipu: array job {k}: 2 tasks, jobs {k}-{k + 1}\n" for k in (1, 3, 5))
    queued = jobs(server)
    assert sorted((x["name"], x["ipus"], x["hold"]) for x in queued.values() if x["array_task_id"]["number"] == 0) == [
        ("a", 1, True), ("b", 4, True), ("c", 2, True)]
    assert [show(server, i)["detail"]["request_id"] for i in (1, 3, 5)] == ["many/1", "many/2", "many/3"]
    again = run(server, "vipu", "submit", *names, "--hold", "--array", "0-1", "--request-id", "many", "--json")
    assert json.loads(again.stdout) == {"job_ids": [1, 2, 3, 4, 5, 6], "duplicate": True,
                                        "jobs": [{"job_ids": [1, 2], "duplicate": True},
                                                 {"job_ids": [3, 4], "duplicate": True},
                                                 {"job_ids": [5, 6], "duplicate": True}]}
    parsable = run(server, "vipu", "submit", *names[:2], "--hold", "--parsable")
    assert parsable.stdout == "7\n8\n" and len(jobs(server)) == 8


def test_stdin_is_the_only_spec_when_there_are_several(unchanged_server, tmp_path):
    server = unchanged_server  # refused: nothing is queued
    (tmp_path / "a.yaml").write_text("ipus: 1\ntime_limit: 1m\n")
    out = run(server, "vipu", "submit", str(tmp_path / "a.yaml"), "-")
    assert out.returncode == 2 and "'-' (a spec on stdin) must be the only spec" in out.stderr
    assert jobs(server) == {}


def test_a_request_id_leaves_room_for_the_suffix_of_each_spec_and_is_never_empty(server, tmp_path):
    files = []
    for k in range(2):
        (tmp_path / f"{k}.yaml").write_text("ipus: 1\ntime_limit: 1m\nhold: true\n")
        files.append(str(tmp_path / f"{k}.yaml"))
    for args, says in [((*files, "--request-id", "x" * 127), "--request-id must be 1 to 126 printable characters"
                                                              " (each of the 2 specs gets /k added)"),
                       ((files[0], "--request-id", "x" * 129), "--request-id must be 1 to 128 printable characters"),
                       ((files[0], "--request-id", ""), "--request-id must be 1 to 128")]:
        out = run(server, "vipu", "submit", *args)
        assert out.returncode == 2 and out.stderr.startswith(f"vipu: error: {says}"), out.stderr
    assert jobs(server) == {}
    assert submit(server, *files, "--request-id", "x" * 126) == [1, 2]


def test_a_job_waiting_for_unavailable_nodes_names_them(server):
    """squeue's `ReqNodeNotAvail, UnavailableNodes:...`: the nodes of the job's allocation that take no new work (a
    drained agent's, one with a failed IPU), hostlist-compressed, in the queue and in `vipu show job` (scontrol's
    Reason=ReqNodeNotAvail,_UnavailableNodes:...)."""
    assert run(server, "vipu-admin", "fail", "ipus", "63").returncode == 0
    assert run(server, "vipu-admin", "drain", "agent", "ag05", "--reason", "fan").returncode == 0
    [whole] = submit(server, "--name", "whole", "--ipus", "64", "--time-limit", "5m")
    queued = wait_for(lambda: (q := jobs(server)[whole])["state_reason"] == "ReqNodeNotAvail" and q)
    reason = "ReqNodeNotAvail, UnavailableNodes:ag[05,15]"
    assert queued["state_description"] == reason  # squeue --json: the name, and the whole text beside it
    assert f"({reason})" in run(server, "vipu", "queue").stdout
    assert show(server, whole)["reason"] == reason
    assert "Reason=ReqNodeNotAvail,_UnavailableNodes:ag[05,15]\n" in run(server, "vipu", "show", "job",
                                                                        str(whole)).stdout  # as scontrol
