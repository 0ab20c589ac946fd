"""`vipu update job` as scontrol update: Slurm's fields in any case, kept across a kill -9, shown by `vipu show job`
and taking effect in scheduling; through the installed CLI and a live controller."""

from __future__ import annotations

import json
import time

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for


def fill(server) -> int:
    """A job holding the whole Pod64, so the others wait."""
    [big] = submit(server, "--ipus", "64", "--time", "10")
    wait_for(lambda: show(server, big)["state"] == "RUNNING")
    return big


def test_fields_change_durably_and_show(server):
    big = fill(server)
    [job] = submit(server, "--ipus", "4", "--time", "5")
    out = run(server, "vipu", "update", "job", str(job), "timelimit=30", "QOS=high", "nice=7", "JobName=renamed",
              "StartTime=now+1hour", f"Dependency=afterany:{big}")
    assert (out.returncode, out.stdout) == (
        0, f"Job {job} updated (TimeLimit, QOS, Nice, Name, StartTime, Dependency): PENDING\n"), out.stderr
    for _ in range(2):  # as updated, then after a kill -9 and a restart
        detail = show(server, job)
        assert (detail["time_limit_s"], detail["qos"], detail["name"], detail["spec"]["nice"],
                detail["dependency"]) == (1800, "high", "renamed", 7, f"afterany:{big}(unfulfilled)")
        assert abs(detail["begin_time"] - time.time() - 3600) < 60
        text = run(server, "vipu", "show", "job", str(job)).stdout
        assert {"TimeLimit=30:00", "QOS=high", "Nice=7", "JobName=renamed"} <= set(text.splitlines())
        server.restart()
    out = run(server, "vipu", "update", f"JobId={job}", "TimeLimit=-10", "Dependency=", "StartTime=now")
    assert out.returncode == 0, out.stderr
    detail = show(server, job)
    assert (detail["time_limit_s"], detail["dependency"]) == (1200, "")
    wait_for(lambda: jobs(server)[job]["state_reason"] == "Resources")


def test_a_qos_or_priority_changes_the_jobs_place_and_priority_0_holds_it(server):
    fill(server)
    first, second = (submit(server, "--ipus", "16", "--time", "5")[0] for _ in range(2))

    def priorities() -> dict[int, float]:
        return {int(r["job_id"]): r["priority"] for r in json.loads(run(server, "vipu", "priority", "--json").stdout)}

    before = priorities()
    assert run(server, "vipu", "update", "job", str(second), "qos=high").returncode == 0
    after = priorities()
    assert after[second] > before[second] and list(after) == [second, first]  # sprio's order: highest first
    assert run(server, "vipu", "update", "job", str(first), "Priority=9999999").returncode == 0
    fixed = priorities()
    assert fixed[first] == 9999999 and list(fixed) == [first, second]
    assert run(server, "vipu", "update", "job", str(first), "Priority=0").returncode == 0
    wait_for(lambda: jobs(server)[first]["state_reason"] == "JobHeldAdmin")


def test_a_running_jobs_time_limit_lowered_ends_it_timeout_at_the_new_limit(server):
    [job] = submit(server, "--ipus", "4", "--time", "10")  # a hold workload: only its limit ends it
    wait_for(lambda: show(server, job)["state"] == "RUNNING")
    out = run(server, "vipu", "update", "job", str(job), "--time", "0:03")
    assert out.returncode == 0, out.stderr
    ended = wait_for(lambda: (x := show(server, job))["state"] != "RUNNING" and x, timeout=30)
    assert ended["state"] == "TIMEOUT" and ended["time_limit_s"] == 3
    assert 3 <= ended["end_time"] - ended["start_time"] < 10
    # its reason as Slurm's (FAIL_TIMEOUT): squeue %r, sacct Reason, scontrol Reason=, squeue --json
    listed = run(server, "vipu", "queue", "-h", "-t", "all", "-j", str(job), "-o", "%i %T %r").stdout
    assert listed == f"{job} TIMEOUT TimeLimit\n"
    assert run(server, "vipu", "history", "-n", "-j", str(job), "-o", "State,Reason").stdout.split() == [
        "TIMEOUT", "TimeLimit"]
    assert "Reason=TimeLimit\n" in run(server, "vipu", "show", "job", str(job)).stdout
    data = json.loads(run(server, "vipu", "queue", "--json", "-t", "all", "-j", str(job)).stdout)
    assert [x["state_reason"] for x in data["jobs"]] == ["TimeLimit"]


def test_a_raised_limit_outlives_the_old_one(server):
    [job] = submit(server, "--ipus", "4", "--time", "0:08")
    started = wait_for(lambda: (x := show(server, job))["state"] == "RUNNING" and x["start_time"])
    assert run(server, "vipu", "update", "job", str(job), "TimeLimit=+1").returncode == 0  # 8 s + 1 minute
    wait_for(lambda: time.time() > started + 10)  # past the old limit
    assert show(server, job)["state"] == "RUNNING" and show(server, job)["time_limit_s"] == 68


def test_array_ids_as_other_commands_take_them(server):
    fill(server)
    [array, *tasks] = submit(server, "--ipus", "4", "--time", "5", "--array", "0-3", "--hold")
    assert run(server, "vipu", "update", "job", f"{array}_2", "QOS=low").returncode == 0
    assert [show(server, t)["qos"] for t in [array, *tasks]] == ["normal", "normal", "low", "normal"]
    out = run(server, "vipu", "update", "job", str(array), "Nice=3", "ArrayTaskThrottle=1")
    assert out.returncode == 0 and out.stdout.count("updated (Nice, ArrayTaskThrottle)") == 4, out.stdout
    assert {show(server, t)["spec"]["array"] for t in [array, *tasks]} == {"0-3%1"}
    out = run(server, "vipu", "update", "job", f"{array}_[1-2]", "Name=pair")
    assert out.returncode == 0 and [show(server, t)["name"] for t in tasks[:2]] == ["pair", "pair"]
    # comma lists, as scontrol's job_list: each id acted on, a line for each that fails, the gravest exit code
    out = run(server, "vipu", "update", f"JobId={array}_[1-2],{array}_3,999", "Name=trio")
    assert (out.returncode, out.stderr.count("\n")) == (3, 1) and "job 999 does not exist" in out.stderr
    assert [show(server, t)["name"] for t in tasks] == ["trio"] * 3
    out = run(server, "vipu", "update", "job", f"{array}_1,{array}_2", "QOS=high")
    assert out.returncode == 0 and [show(server, t)["qos"] for t in tasks[:2]] == ["high", "high"]
    out = run(server, "vipu", "release", f"{array}_1,999,{array}_2")
    assert (out.returncode, out.stderr.count("\n")) == (3, 1) and out.stdout.count("released") == 2
    assert run(server, "vipu", "hold", f"{array}_1,{array}_2").stdout.count("(held)") == 2
    out = run(server, "vipu", "requeue", f"{array}_3,999")
    assert out.returncode == 3 and out.stderr.count("\n") == 2 and "already PENDING" in out.stderr
    assert run(server, "vipu", "hold", ",").returncode == 2



def test_priority_throttle_and_a_running_jobs_limit_survive_a_kill_9(server):
    """The fields test_fields_change_durably_and_show leaves out: an admin's fixed priority, an array's throttle and
    a running job's lowered limit, each acknowledged, then the controller killed -9 and started on its state."""
    [running] = submit(server, "--ipus", "32", "--time", "10")
    wait_for(lambda: show(server, running)["state"] == "RUNNING")
    [waiting] = submit(server, "--ipus", "64", "--time", "5")
    [array, *tasks] = submit(server, "--ipus", "4", "--time", "5", "--array", "0-2", "--hold")
    for args in ([str(waiting), "Priority=4242"], [str(array), "ArrayTaskThrottle=1"], [str(running), "TimeLimit=7"]):
        out = run(server, "vipu", "update", "job", *args)
        assert out.returncode == 0, out.stderr
    server.restart()  # kill -9, then a new controller on the same state
    priorities = {int(r["job_id"]): r["priority"] for r in json.loads(run(server, "vipu", "priority", "--json").stdout)}
    assert priorities[waiting] == 4242
    assert {show(server, t)["spec"]["array"] for t in [array, *tasks]} == {"0-2%1"}
    assert show(server, running)["time_limit_s"] == 420


BAD = [
    (["job", "{job}", "Colour=red"], 2, "'Colour' is not a field vipu update job changes"),
    (["job", "{job}", "TimeLimit"], 2, "'TimeLimit' is not Field=value"),
    (["job", "{job}", "TimeLimit=+UNLIMITED"], 2, "means no limit, which this field does not take"),
    (["job", "{job}", "Nice=lots"], 2, "Nice= 'lots' is not a whole number"),
    (["job", "{job}", "QOS=a", "qos=b"], 2, "QOS is given twice"),
    (["job", "{job}", "QOS=a", "--qos", "b"], 2, "QOS is given as a flag and as QOS="),
    (["job", "{job}"], 2, "nothing to change"),
    (["partition", "p", "Size=4"], 2, "vipu update changes jobs"),
    (["job", "{job}", "--nmae", "x"], 2, "No such option: --nmae"),
    (["job", "{job}", "QOS=gold"], 2, "QOS 'gold' is unknown"),
    (["job", "{big}", "QOS=high"], 4, "is RUNNING: QOS can change only while it is pending (a running job's"
                                       " TimeLimit, Name and Nice can)"),
    (["job", "{job}", "Name=a\nb"], 2, "Name 'a\\nb' contains the control character"),
    (["job", "999", "Nice=1"], 3, "job 999 does not exist"),
]


def test_bad_updates_get_one_line_and_the_documented_exit_code(server):
    big = fill(server)
    [job] = submit(server, "--ipus", "4", "--time", "5")
    for args, code, words in BAD:
        out = run(server, "vipu", "update", *(a.format(job=job, big=big) for a in args))
        assert out.returncode == code and words in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)
    assert show(server, job)["qos"] == "normal" and show(server, big)["qos"] == "normal"
    # a running job's Name and Nice change, as Slurm's (job_mgr.c refuses them only for a finished job); a name
    # may have spaces, as sbatch's, and every listing and filter takes it
    out = run(server, "vipu", "update", "job", str(big), "Name=big run", "Nice=5")
    assert (out.returncode, out.stdout) == (0, f"Job {big} updated (Name, Nice): RUNNING\n"), out.stderr
    detail = show(server, big)
    assert (detail["state"], detail["name"], detail["spec"]["nice"]) == ("RUNNING", "big run", 5)
    assert run(server, "vipu", "queue", "-h", "-o", "%i|%j|%T", "-j", str(big)).stdout == f"{big}|big run|RUNNING\n"
    assert [r["name"] for r in json.loads(run(server, "vipu", "queue", "--json").stdout)["jobs"]
            if r["job_id"] == big] == ["big run"]
    assert run(server, "vipu", "history", "-n", "-P", "-X", "-j", str(big), "-o", "JobID,JobName").stdout == \
        f"{big}|big run\n"
    # no time limit shows as Slurm's UNLIMITED, not as the longest limit kept (walk22c)
    [free] = submit(server, "--ipus", "4", "-t", "UNLIMITED", "-H", "-J", "no limit")
    listed = run(server, "vipu", "queue", "-h", "-j", str(free), "-o", "%l|%L|%j").stdout
    assert listed == "UNLIMITED|UNLIMITED|no limit\n"
    assert "TimeLimit=UNLIMITED" in run(server, "vipu", "show", "job", str(free)).stdout.splitlines()
    assert show(server, free)["spec"]["time_limit"] == "UNLIMITED"  # as docs/mapping.md says, not 31622400.0
    out = run(server, "vipu", "update", "job", str(free), "TimeLimit=+30")  # as scontrol's (walk22d defect 7)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"TimeLimit: job {free} is UNLIMITED, which +N/-N cannot change" in out.stderr
    # show job prints no exported environment nor script text, as scontrol's (--json has them)
    [wrapped] = submit(server, "--wrap", "true", "--ipus", "1", "-H")
    lines = run(server, "vipu", "show", "job", str(wrapped)).stdout.splitlines()
    assert not [line for line in lines if line.startswith("Spec=")]  # scontrol's has no dump of the spec either
    assert [line for line in lines if line.startswith(("Command=", "Partition=", "VipuPartition=", "Requeue="))] == [
        "Partition=default", "VipuPartition=(null)", "Requeue=1", "Command=(batch script)"]
    assert show(server, wrapped)["spec"]["workload"]["environment"]
    assert run(server, "vipu", "cancel", str(wrapped)).returncode == 0
    [row] = [r for r in json.loads(run(server, "vipu", "queue", "--json").stdout)["jobs"] if r["job_id"] == free]
    assert row["time_limit"] == {"infinite": True, "number": 0, "set": True}
    assert run(server, "vipu", "cancel", "-n", "no limit").returncode == 0
    assert show(server, free)["state"] == "CANCELLED"
    assert run(server, "vipu", "history", "-n", "-P", "-j", str(free), "-o", "JobName,Timelimit,TimelimitRaw").stdout \
        == "no limit|UNLIMITED|UNLIMITED\n"
