"""`vipu show config` (scontrol show config) against a real controller: the policy, the scheduler config file and
what it sets, KillWait, RPC threads, and no secret; the listening line names the policy and the file. And a job a
preemption requeued has its reason at once, from the cycle that follows (walk36 finding 1)."""

from __future__ import annotations

import json

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, wait_for


def test_show_config_names_the_policy_its_file_and_the_limits_and_a_preempted_job_has_its_reason(server_factory,
                                                                                                  tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text("first_job_id: 5001\nmin_job_age: 10m\n")
    server = server_factory(pod="bow-pod16", extra=["--scheduler-config", str(config), "--kill-wait", "5",
                                                    "--rpc-threads", "4", "--secure"])
    assert f"; policy backfill, scheduler config {config});" in server.listening
    key = (server.state_dir / "admin.key").read_text().strip()
    made = run(server, "vipu-admin", "create", "user", "bob", "--json", env=as_(server, key))
    bob = json.loads(made.stdout)["access_key"]
    out = run(server, "vipu", "show", "config", env=as_(server, bob))  # every user may read it, as in Slurm
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" = ", 1) for line in out.stdout.splitlines())
    assert {k.rstrip(): v for k, v in lines.items() if k.rstrip() in (
        "SchedulerType", "SchedulerConfigFile", "SchedulerPolicyFile", "FirstJobId", "MinJobAge", "KillWait",
        "RpcThreads", "AccessKeys", "PriorityWeightQos")} == {
        "SchedulerType": "backfill", "SchedulerConfigFile": str(config), "SchedulerPolicyFile": "(null)",
        "FirstJobId": "5001", "MinJobAge": "600 sec", "KillWait": "5 sec", "RpcThreads": "4",
        "AccessKeys": "required (--secure)", "PriorityWeightQos": "2000"}
    assert len({len(k) for k in lines}) == 1  # keys padded to one width, as scontrol's
    data = json.loads(run(server, "vipu", "show", "config", "--json", env=as_(server, bob)).stdout)
    assert data == {k.rstrip(): v for k, v in lines.items()}
    assert key not in out.stdout and bob not in out.stdout and "admin.key" not in out.stdout

    as_bob = {"env": as_(server, bob)}
    low = run(server, "vipu", "submit", "--name", "b16", "--ipus", "16", "-q", "low", "--time-limit", "10m",
              "--duration", "5m", **as_bob)
    assert low.stdout == "Submitted batch job 5001\n", low.stderr
    wait_for(lambda: show_as(server, 5001, bob)["state"] == "RUNNING")
    run(server, "vipu", "submit", "--name", "hi", "--ipus", "16", "-q", "high", "--time-limit", "10m",
        "--duration", "5m", **as_bob)
    hi = wait_for(lambda: (lambda x: x["state"] == "RUNNING" and x)(show_as(server, 5002, bob)))
    victim = wait_for(lambda: (lambda x: x["reason"] and x)(show_as(server, 5001, bob)))  # nothing else happens
    assert (victim["state"], victim["reason"], victim["estimated_start"]) == (
        "PENDING", "Resources", hi["start_time"] + 600)  # when the preemptor's time limit runs out


def as_(server, key: str) -> dict:
    return {**server.env(), "VIPU_CLI_API_ACCESS_KEY": key}


def show_as(server, job: int, key: str) -> dict:
    out = run(server, "vipu", "show", "job", str(job), "--json", env=as_(server, key))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
