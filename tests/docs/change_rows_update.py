"""The checks of docs/mapping.md's scontrol update and sbatch rows (tests/docs/test_slurm_changes.py runs them):
each takes a Live controller (secure, or open where it needs programs) and asserts what its row says."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for


# -- scontrol update ----------------------------------------------------------------------------------------------


def limit(live, job) -> float:
    return live.show(job)["time_limit_s"]


def update_time_limit(live, tmp_path):
    big = live.fill()
    [job] = live.submit("--ipus", "4")
    for words, seconds in ((["job", str(job), "TimeLimit=30"], 1800), ([f"JobId={job}", "timelimit=45"], 2700),
                           (["job", str(job), "-t", "30"], 1800), (["job", str(job), "TimeLimit=+30"], 3600),
                           (["job", str(job), "TimeLimit=-30"], 1800), (["job", str(job), "TimeLimit=10:30"], 630),
                           (["job", str(job), "TimeLimit=1:00:00"], 3600)):
        live.ok("update", *words)
        assert limit(live, job) == seconds, words
    live.refused(2, "qos normal allows at most 02:00:00", "update", "job", str(job), "TimeLimit=0-03")
    assert limit(live, job) == 3600
    [running] = live.submit("--ipus", "4", "--time", "10", who="bob")
    live.ok("cancel", str(big), who="carol")  # free the Pod
    wait_for(lambda: live.states(running) == ["RUNNING"])
    live.refused(6, "", "update", "job", str(running), "TimeLimit=20", who="bob")  # the owner may not raise it
    live.ok("update", "job", str(running), "TimeLimit=20", who="admin")  # an admin may
    live.ok("update", "job", str(running), "TimeLimit=5", who="bob")  # the owner may lower it
    assert limit(live, running) == 300
    started = live.show(running)["start_time"]
    wait_for(lambda: time.time() > started + 2)
    live.ok("update", "job", str(running), "TimeLimit=0:01", who="bob")  # run past: ends at once
    ended = wait_for(lambda: (x := live.show(running))["state"] != "RUNNING" and x)
    assert ended["state"] == "TIMEOUT"


def update_unlimited(live, tmp_path):
    """Regression: TimeLimit=UNLIMITED was refused by update while submit -t took it."""
    big = live.fill()
    [job] = live.submit("--ipus", "4")
    for words in (["TimeLimit=UNLIMITED"], ["timelimit=infinite"], ["-t", "0"]):
        live.ok("update", "job", str(job), "TimeLimit=10")
        live.ok("update", "job", str(job), *words)
        assert limit(live, job) == 7200, words  # normal's max_time_limit, as `submit -t UNLIMITED` gives
    [other] = live.submit("--ipus", "4", "--qos", "high")
    live.ok("update", "job", str(other), "TimeLimit=UNLIMITED")
    assert limit(live, other) == 366 * 86400  # a QOS without a max: the controller's year
    assert "TimeLimit=UNLIMITED" in live.ok("show", "job", str(other)).splitlines()  # shown as Slurm shows none
    [running] = live.submit("--ipus", "4", "--time", "10", who="bob")
    live.ok("cancel", str(big), who="carol")
    wait_for(lambda: live.states(running) == ["RUNNING"])
    live.refused(6, "only an admin may raise", "update", "job", str(running), "TimeLimit=UNLIMITED", who="bob")
    live.ok("update", "job", str(running), "TimeLimit=UNLIMITED", who="admin")
    assert limit(live, running) == 7200


def priority_of(live, job) -> float:
    rows = json.loads(live.ok("priority", "--json", who="admin"))
    return {int(r["job_id"]): r["priority"] for r in rows}[job]


def update_qos(live, tmp_path):
    big = live.fill()
    [job] = live.submit("--ipus", "4")
    before = priority_of(live, job)
    live.ok("update", "job", str(job), "QOS=high")
    assert live.show(job)["qos"] == "high" and priority_of(live, job) > before
    live.ok("update", "job", str(job), "--qos", "low")
    assert live.show(job)["qos"] == "low"
    live.refused(4, "QOS can change only while it is pending", "update", "job", str(big), "QOS=high", who="carol")


def update_nice(live, tmp_path):
    big = live.fill()
    live.ok("update", "job", str(big), "Nice=7", who="carol" if live.keys else None)  # a running job's too
    assert (live.show(big)["state"], live.show(big)["spec"]["nice"]) == ("RUNNING", 7)
    [job] = live.submit("--ipus", "4")
    live.ok("update", "job", str(job), "Nice=100")
    assert live.show(job)["spec"]["nice"] == 100
    live.ok("update", "job", str(job), "--nice", "5")
    assert live.show(job)["spec"]["nice"] == 5
    live.refused(6, "nice", "update", "job", str(job), "Nice=-5")
    live.ok("update", "job", str(job), "Nice=-5", who="admin")
    assert live.show(job)["spec"]["nice"] == -5


def update_dependency(live, tmp_path):
    live.fill()
    first, job, later = (live.submit("--ipus", "4", "--hold")[0] for _ in range(3))
    live.ok("update", "job", str(job), f"Dependency=afterok:{first}")
    assert live.show(job)["dependency"] == f"afterok:{first}(unfulfilled)"  # as scontrol shows what it waits for
    live.ok("update", "job", str(job), "-d", f"afterany:{first}")
    assert live.show(job)["dependency"] == f"afterany:{first}(unfulfilled)"
    assert live.show(job)["spec"]["dependency"] == f"afterany:{first}"  # the spec: as written
    live.refused(2, "", "update", "job", str(job), f"Dependency=afterok:{later}")  # queued after it: never a cycle
    live.ok("update", "job", str(job), f"Dependency={first}")  # bare ids, Slurm's old form: afterany
    assert live.show(job)["dependency"] == f"afterany:{first}(unfulfilled)"
    live.ok("update", "job", str(job), f"Dependency=aftercorr:{first}")  # not an array: as afterok, as slurmctld
    assert live.show(job)["dependency"] == f"aftercorr:{first}(unfulfilled)"
    live.refused(2, "unknown dependency type 'afterburstbuffer'", "update", "job", str(job),
                 f"Dependency=afterburstbuffer:{first}")
    live.ok("update", "job", str(job), "Dependency=")
    assert live.show(job)["dependency"] == ""


def update_nodes(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    live.ok("update", "job", str(job), "ReqNodeList=ag01", "ExcNodeList=ag00")
    assert (live.show(job)["spec"]["nodelist"], live.show(job)["spec"]["exclude"]) == ("ag01", "ag00")
    live.ok("update", "job", str(job), "NodeList=", "-x", "ag[00-01]")
    assert (live.show(job)["spec"]["nodelist"], live.show(job)["spec"]["exclude"]) == (None, "ag[00-01]")
    live.refused(2, "ReqNodeList names ag99, which is no IPU-Machine", "update", "job", str(job), "-w", "ag99")
    live.refused(2, "ReqNodeList 'ag[00-01]' names machines that no job of 4 IPUs can hold together", "update",
                 "job", str(job), "ReqNodeList=ag[00-01]", "ExcNodeList=")
    live.refused(2, "ExcNodeList and ReqNodeList both name ag01", "update", "job", str(job), "ReqNodeList=ag01",
                 "ExcNodeList=ag01")
    live.refused(2, "every one excluded: exclude fewer nodes\n", "update", "job", str(job),  # no -p: it cannot move
                 "ExcNodeList=ag[00-15]")
    big = live.fill()
    live.refused(4, f"job {big} is RUNNING: ReqNodeList can change only while it is pending", "update", "job",
                 str(big), "ReqNodeList=ag00", who="admin")


def update_name(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    for words, name in ((["Name=x"], "x"), (["JobName=y"], "y"), (["-J", "z"], "z")):
        live.ok("update", "job", str(job), *words)
        assert live.show(job)["name"] == name
    live.ok("update", "job", str(job), "Name=with a space")  # any printable characters, as sbatch's -J
    assert live.show(job)["name"] == "with a space"
    live.refused(2, "control character", "update", "job", str(job), "Name=a\tb")
    big = live.fill()
    live.ok("update", "job", str(big), "Name=big", who="carol" if live.keys else None)  # a running job's too
    assert (live.show(big)["state"], live.show(big)["name"]) == ("RUNNING", "big")
    live.refused(2, "Name= is empty", "update", "job", str(job), "Name=")
    live.refused(2, "-J/--job-name is empty", "update", "job", str(job), "-J", "")


def update_throttle(live, tmp_path):
    first, *_ = live.submit("--ipus", "4", "--array", "0-3", "--hold")
    live.ok("update", "job", str(first), "ArrayTaskThrottle=4")
    assert live.show(first)["spec"]["array"] == "0-3%4"
    live.ok("update", "job", str(first), "--array-task-throttle", "2")
    assert live.show(first)["spec"]["array"] == "0-3%2"
    live.ok("update", "job", str(first), "ArrayTaskThrottle=0")
    assert live.show(first)["spec"]["array"] == "0-3"


def update_begin(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--begin", "now+2hours")
    for words in (["StartTime=now+1hour"], ["BeginTime=now+1hour"], ["--begin", "now+1hour"]):
        live.ok("update", "job", str(job), *words)
        assert abs(live.show(job)["begin_time"] - time.time() - 3600) < 60
    assert live.show(job)["reason"] == "BeginTime"
    for text in ("16:00", "tomorrow", "now+90"):  # as submit --begin reads them: a time of day, a day, seconds
        live.ok("update", "job", str(job), f"StartTime={text}")
        assert live.show(job)["begin_time"] == begin_of(live, text)
    live.refused(2, "StartTime", "update", "job", str(job), "StartTime=10m")  # ambiguous, as at submit
    live.ok("update", "job", str(job), "StartTime=now")
    wait_for(lambda: live.states(job) == ["RUNNING"])


def begin_of(live, text: str) -> float:
    """The begin time `submit --begin TEXT` gives now: update must read StartTime= as submit reads --begin."""
    [probe] = live.submit("--ipus", "4", "--hold", "--begin", text)
    begin = live.show(probe)["begin_time"]
    live.ok("cancel", str(probe))
    return begin if text != "now+90" else pytest.approx(begin, abs=30)


def update_priority(live, tmp_path):
    live.fill()
    first, second = (live.submit("--ipus", "16")[0] for _ in range(2))
    live.refused(6, "", "update", "job", str(first), "Priority=5000")
    live.ok("update", "job", str(second), "Priority=5000", who="admin")
    rows = json.loads(live.ok("priority", "--json", who="admin"))
    assert [(int(r["job_id"]), r["priority"]) for r in rows][0] == (second, 5000)  # first in priority order
    live.ok("update", "job", str(second), "--priority", "0", who="admin")
    wait_for(lambda: live.show(second)["reason"] == "JobHeldAdmin")
    live.ok("update", "job", str(second), "Priority=7000", who="admin")  # a fixed priority releases it
    wait_for(lambda: not live.show(second)["held"])
    assert priority_of(live, second) == 7000


def update_array(live, tmp_path):
    live.fill()
    first, *tasks = live.submit("--ipus", "4", "--array", "0-3", "--hold")
    live.ok("update", "job", str(first), "Nice=3")
    assert [live.show(t)["spec"]["nice"] for t in (first, *tasks)] == [3] * 4
    live.ok("update", "job", f"{first}_3", "QOS=low")
    assert [live.show(t)["qos"] for t in (first, *tasks)] == ["normal"] * 3 + ["low"]
    live.ok("cancel", f"{first}_0")
    live.ok("update", "job", f"{first}_[1-2]", "Name=pair")
    assert [live.show(t)["name"] for t in (first, *tasks)] == ["job", "pair", "pair", "job"]
    live.ok("update", "job", str(first), "Name=all")  # not the ended task
    live.ok("update", f"JobId={first}_1,{first}_2", "Nice=4")  # a comma list, as scontrol's job_list
    assert [live.show(t)["spec"]["nice"] for t in tasks] == [4, 4, 3]
    assert [live.show(t)["name"] for t in (first, *tasks)] == ["job", "all", "all", "all"]


def update_durable(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    live.ok("update", "job", str(job), "Name=kept", "Nice=9", "TimeLimit=20")
    live.server.restart()  # kill -9, then a new controller on the same state
    detail = live.show(job)
    assert (detail["name"], detail["spec"]["nice"], detail["time_limit_s"]) == ("kept", 9, 1200)
    text = live.ok("show", "job", str(job))
    assert {"JobName=kept", "Nice=9", "TimeLimit=20:00"} <= set(text.splitlines())


# -- sbatch -------------------------------------------------------------------------------------------------------

LINE = re.compile(r"Job (\d+) to start at (\S+) using (\d+) IPUs? on nodes (\S+) in partition (\S+)"
                  r" \(V-IPU partition (\S+)\)")  # sbatch's order: its partition is the allocation


def submit_test_only(open_live, tmp_path):
    live = open_live
    out = live.run("submit", "--ipus", "16", "--time", "5", "--test-only")
    assert out.returncode == 0 and out.stderr == "" and LINE.fullmatch(out.stdout.strip()).group(1, 3, 4, 5, 6) == \
        ("1", "16", "ag[00-03]", "default", "slurm_1")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    out = live.run("submit", "--ipus", "1", "--test-only", str(script))  # any spec: a script too
    assert out.returncode == 0 and LINE.fullmatch(out.stdout.strip()), out.stderr
    out = live.run("submit", "--ipus", "16", "--hold", "--test-only")
    assert out.stdout.startswith("Job 1 to start at Unknown") and "held" in out.stdout
    tested = json.loads(live.ok("submit", "--ipus", "16", "--test-only", "--json"))
    assert {"job_id", "start_time", "reason", "partition", "allocation", "ipus"} <= set(tested)
    assert tested["job_id"] == 1
    assert tested["start_time"].endswith("Z")  # RFC 3339, as a job's --json times
    live.refused(2, "--qos 'gold' is unknown", "submit", "--ipus", "16", "--qos", "gold", "--test-only")
    assert json.loads(live.ok("queue", "--json"))["jobs"] == []
    assert live.submit("--ipus", "4", "--hold") == [1]  # no id was used up


def submit_too_big(live, tmp_path):
    made = run(live.server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag00,ag01,ag02,ag03",
               env=live.env("admin"))
    assert made.returncode == 0, made.stderr
    for test_only in ((), ("--test-only",)):  # default: the 48 IPUs a1 leaves, in aligned blocks of at most 32
        live.refused(2, "--ipus is 64 but allocation default has 48 IPUs, whose largest aligned block holds 32 IPUs",
                     "submit", "--ipus", "64", *test_only)
    live.refused(2, "-N/--nodes 16: allocation default (the agents no named allocation holds) has 12 nodes (48 IPUs),"
                 " whose largest aligned block is 8 nodes (32 IPUs); give at most -N 8", "submit", "-N", "16")
    live.refused(2, "--ipus is 32 but allocation a1 has 16 IPUs; ask for at most 16", "submit", "--ipus", "32", "-p",
                 "a1", who="admin")
    live.refused(2, "'--ipus': 99999999999 is more than bow-pod64 can hold (64 IPUs); give a power of two up to 64",
                 "submit", "--ipus", "99999999999")
    live.refused(2, "'--nice': 99999999999 is out of range; give -10000 to 10000", "submit", "--nice", "99999999999")
    live.refused(2, "Priority= 99999999999999999999 is out of range; give 1 to 4294967294, or 0 to hold the job",
                 "update", "job", "1", "Priority=99999999999999999999", who="admin")
    assert json.loads(live.ok("queue", "--json", who="admin"))["jobs"] == []


def submit_empty_qos(live, tmp_path):
    live.refused(2, "-q/--qos is empty", "submit", "--ipus", "1", "--qos", "")
    live.refused(2, "", "submit", "--ipus", "1", "-J", "")  # as an empty --job-name is
    live.refused(2, "-D/--chdir is empty", "submit", "--wrap", "true", "--ipus", "1", "-D", "")
    assert json.loads(live.ok("queue", "--json", who="admin"))["jobs"] == []


def submit_missing_output(open_live, tmp_path):
    live = open_live
    missing = tmp_path / "missing" / "dir"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    why = f"-o/--output file {missing}/%j.out: its directory {missing} does not exist; create it, or give a path"
    for kind in (["--duration", "1s"], [], [str(script)]):  # sleep, hold, a program: refused, the folder missing
        live.refused(2, why, "submit", "--ipus", "1", "-o", f"{missing}/%j.out", *kind)
    missing.mkdir(parents=True)  # there at the submit, gone at the start: the start fails the job
    [blocker] = live.submit("--ipus", "1", "-H")
    after = ("-d", f"afterany:{blocker}", "-o", f"{missing}/%j.out")
    built_in = [live.submit("--ipus", "1", "--duration", "1s", *after)[0], live.submit("--ipus", "1", *after)[0]]
    [program] = live.submit("--ipus", "1", *after, str(script))
    missing.rmdir()
    missing.parent.rmdir()
    live.ok("cancel", str(blocker))
    for job in (*built_in, program):
        wait_for(lambda: live.states(job)[0] not in ("PENDING", "RUNNING"))
        assert live.states(job) == ["FAILED"]
    assert not missing.parent.exists()
    for job in built_in:
        assert f"EndedBy=output file {missing}/{job}.out" in live.ok("show", "job", str(job))
    assert "EndedBy=" in live.ok("show", "job", str(program)) and str(missing) in live.ok("show", "job", str(program))
