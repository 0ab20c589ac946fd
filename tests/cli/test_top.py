"""`vipu top` draws the Pod whether or not anything runs."""

from __future__ import annotations

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, submit, wait_for
from tests.server.test_auth import secure  # noqa: F401 - the fixture


def test_top_on_an_idle_pod(server):
    out = run(server, "vipu", "top", "--once")
    assert out.returncode == 0, out.stderr
    assert "bow-pod64: 64 IPUs  0 allocated  64 idle  0 failed" in out.stdout
    assert "No job is running." in out.stdout and "The queue is empty." in out.stdout


def test_top_shows_jobs_partitions_and_failures(server):
    [running] = submit(server, "--name", "trainer", "--ipus", "16", "--time-limit", "5m")
    [pending] = submit(server, "--name", "waiter", "--ipus", "64", "--time-limit", "5m")
    wait_for(lambda: jobs(server)[pending]["state_reason"] != "None")
    assert run(server, "vipu-admin", "fail", "ipus", "63").returncode == 0
    out = run(server, "vipu", "top", "--once").stdout
    assert "16 allocated  47 idle  1 failed" in out and "1 running, 1 pending" in out
    lines = out.splitlines()
    assert lines[0].endswith("| 1 running, 1 pending jobs"), lines[0]  # a pipe gets whole lines, not 80 columns
    machine0 = next(line for line in lines if line.startswith("0 "))
    assert "####" in machine0 and f"slurm_{running}" in machine0
    machine15 = next(line for line in lines if line.startswith("15 "))
    assert "...X" in machine15
    waiter = next(line for line in lines if "waiter" in line)
    assert "Resources" in waiter or "ReqNodeNotAvail" in waiter, waiter


def test_top_names_array_tasks_as_queue_does(server):
    """A task's own job id read as a whole array (`153` for task 153_0 ...); top now says N_T, as vipu queue."""
    array = submit(server, "--name", "sweep", "--ipus", "32", "--time-limit", "5m", "--array", "0-2")[0]
    wait_for(lambda: sorted(x["job_state"][0] for x in jobs(server).values()) == ["PENDING", "RUNNING", "RUNNING"])
    out = run(server, "vipu", "top", "--once").stdout
    sweep = [line.split()[0] for line in out.splitlines() if "sweep" in line]
    assert sorted(sweep) == [f"{array}_{t}" for t in range(3)], out



def test_top_under_secure_says_whose_running_jobs_it_hides(secure):
    """Regression (walk31): bob's frame said "1 running" in its title, the Pod's count, then "No job is running."
    for alice's job, which he may not see; and a "... N more" row counted other users' jobs."""
    server, as_, _, new_user = secure
    alice, bob = as_(new_user("alice")), as_(new_user("bob"))
    out = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "5m", "--parsable", env=alice)
    assert out.returncode == 0, out.stderr
    wait_for(lambda: "1 running" in run(server, "vipu", "top", "--once", env=bob).stdout)
    frame = run(server, "vipu", "top", "--once", env=bob).stdout
    assert "The running job is not yours." in frame and "No job is running." not in frame
    assert "alice" not in frame
