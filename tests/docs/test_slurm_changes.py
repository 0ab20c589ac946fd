"""Every row of docs/mapping.md's table "Slurm commands that change jobs -> vipu" (scancel, scontrol update, sbatch)
runs against a live controller and does what the row says: each row has a check below, keyed by the row's Slurm
cell, and a row without one fails. The controller runs with --secure and users alice, bob and carol (the rows speak
of owners, admins and the caller), except where a row needs programs or the open mode."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for

ROOT = Path(__file__).resolve().parents[2]
TITLE = "## Slurm commands that change jobs -> vipu"
QOS_CONFIG = "qos:\n  normal: {priority: 50, max_time_limit: 2h}\n  high: {priority: 100}\n  low: {priority: 0}\n"


def rows() -> dict[str, tuple[str, str]]:
    """Each row's Slurm cell -> its vipu and notes cells."""
    page = (ROOT / "docs/mapping.md").read_text()
    section = page.split(TITLE, 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| Slurm ", "|---")):
            slurm, vipu, notes = (c.strip() for c in re.split(r"(?<!\\)\|", line)[1:4])
            out[slurm] = (vipu, notes)
    return out


class Live:
    """A controller, and the CLI as its users: `who` alice, bob, carol, admin, or None in the open mode."""

    def __init__(self, server, keys: dict[str, str]):
        self.server, self.keys = server, keys

    def env(self, who: str | None) -> dict:
        env = self.server.env()
        if who is not None:
            env["VIPU_CLI_API_ACCESS_KEY"] = self.keys[who]
        return env

    def run(self, *args: str, who: str | None = "alice") -> subprocess.CompletedProcess:
        who = who if self.keys else None
        return run(self.server, "vipu", *args, env=self.env(who))

    def ok(self, *args: str, who: str | None = "alice") -> str:
        out = self.run(*args, who=who)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    def refused(self, code: int, words: str, *args: str, who: str | None = "alice") -> None:
        out = self.run(*args, who=who)
        assert out.returncode == code and words in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)

    def submit(self, *args: str, who: str | None = "alice") -> list[int]:
        return [int(i) for i in json.loads(self.ok("submit", "--time", "5", *args, "--json", who=who))["job_ids"]]

    def show(self, job: int | str) -> dict:
        return json.loads(self.ok("show", "job", str(job), "--json", who="admin"))

    def states(self, *ids: int) -> list[str]:
        return [self.show(i)["state"] for i in ids]

    def fill(self) -> int:
        """A job holding the whole Pod64 (a hold workload: it runs till cancelled), so the others wait."""
        [big] = self.submit("--ipus", "64", who="carol" if self.keys else None)
        wait_for(lambda: self.states(big) == ["RUNNING"])
        return big


@pytest.fixture
def live(server_factory, tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text(QOS_CONFIG)
    server = server_factory(extra=["--secure", "--scheduler-config", str(config)])
    keys = {"admin": (server.state_dir / "admin.key").read_text().strip()}
    for name in ("alice", "bob", "carol"):
        out = run(server, "vipu-admin", "create", "user", name, "--json",
                  env={**server.env(), "VIPU_CLI_API_ACCESS_KEY": keys["admin"]})
        keys[name] = json.loads(out.stdout)["access_key"]
    return Live(server, keys)


@pytest.fixture
def open_live(server):
    return Live(server, {})


# -- scancel ------------------------------------------------------------------------------------------------------


def cancel_array_ids(live, tmp_path):
    first, *_ = tasks = live.submit("--ipus", "4", "--array", "0-5", "--hold")
    live.ok("cancel", f"{first}_3")
    assert live.states(*tasks) == ["PENDING"] * 3 + ["CANCELLED"] + ["PENDING"] * 2
    live.ok("cancel", f"{first}_[1-2]")
    assert live.states(*tasks)[1:3] == ["CANCELLED"] * 2
    [other] = live.submit("--ipus", "4", "--hold")
    live.refused(3, "999", "cancel", "999", str(other), str(first))  # a line for the id of no job; the rest go
    assert live.states(other, *tasks) == ["CANCELLED"] * 7


def cancel_user(live, tmp_path):
    [carol] = live.submit("--ipus", "4", "--hold", who="carol")
    [bob] = live.submit("--ipus", "4", "--hold", who="bob")
    live.refused(3, f"job {carol} does not match user bob", "cancel", "-u", "bob", str(carol), who="admin")
    assert live.states(carol, bob) == ["PENDING", "PENDING"]
    live.ok("cancel", "--user=bob", who="admin")
    assert live.states(carol, bob) == ["PENDING", "CANCELLED"]


def cancel_me(live, tmp_path):
    [mine] = live.submit("--ipus", "4", "--hold", who="alice")
    [theirs] = live.submit("--ipus", "4", "--hold", who="bob")
    live.ok("cancel", "--me", who="admin")  # the admin's own: none
    assert live.states(mine, theirs) == ["PENDING", "PENDING"]
    live.ok("cancel", "--me", who="alice")
    assert live.states(mine, theirs) == ["CANCELLED", "PENDING"]


def cancel_name(live, tmp_path):
    x, y, z, w = (live.submit("--ipus", "4", "--hold", "--name", n)[0] for n in "xyzw")
    for flag, name in (("-n", "x"), ("--name", "y"), ("--jobname", "z")):
        live.ok("cancel", flag, name)
    assert live.states(x, y, z, w) == ["CANCELLED"] * 3 + ["PENDING"]


def cancel_state(live, tmp_path):
    big = live.fill()
    p1, p2 = (live.submit("--ipus", "4")[0] for _ in range(2))
    live.ok("cancel", "--state", "PENDING", str(p1))
    live.refused(3, f"job {p2}", "cancel", "-t", "RUNNING", str(p2))  # a filter narrows the job named
    live.ok("cancel", "-t", "PD", who="alice")
    live.ok("cancel", "-t", "R,PD", str(big), who="carol")
    assert live.states(big, p1, p2) == ["CANCELLED"] * 3
    live.refused(2, "state COMPLETED: only active jobs can be cancelled", "cancel", "-t", "COMPLETED")


def cancel_partition(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")  # names no allocation: runs in default
    live.refused(3, f"job {job}", "cancel", "-p", "gpu", str(job))
    live.ok("cancel", "--partition", "default", str(job))
    assert live.states(job) == ["CANCELLED"]


def cancel_qos(live, tmp_path):
    [high] = live.submit("--ipus", "4", "--hold", "--qos", "high")
    [normal] = live.submit("--ipus", "4", "--hold")
    live.ok("cancel", "-q", "high")
    assert live.states(high, normal) == ["CANCELLED", "PENDING"]
    live.ok("cancel", "--qos", "normal")
    assert live.states(normal) == ["CANCELLED"]


def cancel_account(live, tmp_path):
    [physics] = live.submit("--ipus", "4", "--hold", "-A", "physics")
    [other] = live.submit("--ipus", "4", "--hold", "-A", "chemistry")
    live.ok("cancel", "-A", "physics")
    assert live.states(physics, other) == ["CANCELLED", "PENDING"]
    live.ok("cancel", "--account", "chemistry")
    assert live.states(other) == ["CANCELLED"]


def cancel_filters_alone(live, tmp_path):
    big = live.fill()
    mine, theirs = live.submit("--ipus", "4")[0], live.submit("--ipus", "4", who="bob")[0]
    live.ok("cancel", "-t", "PD", who="alice")  # --secure: a user's own
    assert live.states(big, mine, theirs) == ["RUNNING", "CANCELLED", "PENDING"]


def cancel_filters_alone_open(open_live, tmp_path):
    live = open_live
    big = live.fill()
    mine, theirs = live.submit("--ipus", "4")[0], live.submit("--ipus", "4", "--user", "bob")[0]
    live.ok("cancel", "-t", "PD")  # without --secure: everyone's
    assert live.states(big, mine, theirs) == ["RUNNING", "CANCELLED", "CANCELLED"]


def cancel_nothing(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    live.refused(2, "name job ids, or choose jobs with filters", "cancel")
    assert live.states(job) == ["PENDING"]


def trap_script(tmp_path) -> tuple[Path, Path]:
    script, output = tmp_path / "trap.sh", tmp_path / "trap.out"
    script.write_text("#!/bin/bash\ntrap 'echo got USR1' USR1\necho ready\nwhile true; do sleep 0.05; done\n")
    return script, output


def cancel_signal(open_live, tmp_path):
    live = open_live
    script, output = trap_script(tmp_path)
    [job] = live.submit(str(script), "--ipus", "1", "-o", str(output))
    [sleeper] = live.submit("--ipus", "1", "--duration", "10m")
    wait_for(lambda: output.exists() and "ready" in output.read_text() and live.states(sleeper) == ["RUNNING"],
             timeout=90)
    for signal in ("USR1", "SIGUSR1", "10"):  # names, SIG names, numbers
        before = output.read_text().count("got USR1")
        assert live.ok("cancel", "-s", signal, str(job)) == f"Job {job} signalled (SIGUSR1): RUNNING\n"
        wait_for(lambda: output.read_text().count("got USR1") > before, timeout=60)
    assert live.states(job) == ["RUNNING"]  # the trap caught it: the job goes on
    live.refused(4, "runs a sleep workload", "cancel", "-s", "USR1", str(sleeper))
    [held] = live.submit(str(script), "--ipus", "1", "--hold")
    live.refused(4, "only a running job's program can be signalled", "cancel", "-s", "USR1", str(held))
    out = live.ok("cancel", "--signal", "USR1", "-t", "R")  # filters alone: only running programs
    assert out == f"Job {job} signalled (SIGUSR1): RUNNING\n"
    assert live.states(sleeper, held) == ["RUNNING", "PENDING"]
    live.refused(2, "signals are 1 to 64", "cancel", "-s", "65", str(job))


def cancel_batch_full(open_live, tmp_path):
    live = open_live
    script, output = trap_script(tmp_path)
    [job] = live.submit(str(script), "--ipus", "1", "-o", str(output))
    wait_for(lambda: output.exists() and "ready" in output.read_text(), timeout=90)
    live.ok("cancel", "-b", "--full", "-s", "USR1", str(job))  # accepted: the script gets it
    wait_for(lambda: "got USR1" in output.read_text(), timeout=60)
    x, y = (live.submit("--ipus", "1", "--hold")[0] for _ in range(2))
    live.ok("cancel", "--batch", str(x))
    live.ok("cancel", "-f", str(y))
    assert live.states(job, x, y) == ["RUNNING", "CANCELLED", "CANCELLED"]


def cancel_interactive(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    for flag in ("-i", "--interactive"):
        live.refused(2, f"No such option: {flag}", "cancel", flag, str(job))
    assert live.states(job) == ["PENDING"]


def cancel_misspelt(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold", "--name", "x")
    live.refused(2, "No such option: --nmae", "cancel", "--nmae", "x")
    assert live.states(job) == ["PENDING"]


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
    live.fill()
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
    assert live.show(job)["dependency"] == f"afterok:{first}"
    live.ok("update", "job", str(job), "-d", f"afterany:{first}")
    assert live.show(job)["dependency"] == f"afterany:{first}"
    live.refused(2, "", "update", "job", str(job), f"Dependency=afterok:{later}")  # queued after it: never a cycle
    live.ok("update", "job", str(job), "Dependency=")
    assert live.show(job)["dependency"] == ""


def update_name(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    for words, name in ((["Name=x"], "x"), (["JobName=y"], "y"), (["-J", "z"], "z")):
        live.ok("update", "job", str(job), *words)
        assert live.show(job)["name"] == name


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
    live.ok("update", "job", str(job), "StartTime=now")
    wait_for(lambda: live.states(job) == ["RUNNING"])


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

LINE = re.compile(r"Job (\d+) to start at (\S+) using (\d+) IPUs on partition (\S+) \(allocation (\S+)\)")


def submit_test_only(open_live, tmp_path):
    live = open_live
    out = live.run("submit", "--ipus", "16", "--time", "5", "--test-only")
    assert out.returncode == 0 and out.stderr == "" and LINE.fullmatch(out.stdout.strip()).group(1, 3, 4, 5) == \
        ("1", "16", "slurm_1", "default")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    out = live.run("submit", str(script), "--ipus", "1", "--test-only")  # any spec: a script too
    assert out.returncode == 0 and LINE.fullmatch(out.stdout.strip()), out.stderr
    out = live.run("submit", "--ipus", "16", "--hold", "--test-only")
    assert out.stdout.startswith("Job 1 to start at Unknown") and "held" in out.stdout
    tested = json.loads(live.ok("submit", "--ipus", "16", "--test-only", "--json"))
    assert {"job_id", "start", "reason", "partition", "allocation", "ipus"} <= set(tested) and tested["job_id"] == 1
    live.refused(2, "qos 'gold' is unknown", "submit", "--ipus", "16", "--qos", "gold", "--test-only")
    assert json.loads(live.ok("queue", "--json"))["jobs"] == []
    assert live.submit("--ipus", "4", "--hold") == [1]  # no id was used up


def submit_empty_qos(live, tmp_path):
    live.refused(2, "qos (--qos) is empty", "submit", "--ipus", "1", "--qos", "")
    live.refused(2, "", "submit", "--ipus", "1", "-J", "")  # as an empty --job-name is
    assert json.loads(live.ok("queue", "--json", who="admin"))["jobs"] == []


def submit_missing_output(open_live, tmp_path):
    live = open_live
    missing = tmp_path / "missing" / "dir"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    built_in = [live.submit("--ipus", "1", "--duration", "1s", "-o", f"{missing}/%j.out")[0],
                live.submit("--ipus", "1", "-o", f"{missing}/%j.out")[0]]  # sleep, hold
    [program] = live.submit(str(script), "--ipus", "1", "-o", f"{missing}/%j.out")
    for job in (*built_in, program):
        wait_for(lambda: live.states(job)[0] not in ("PENDING", "RUNNING"))
        assert live.states(job) == ["FAILED"]
    assert not missing.parent.exists()
    for job in built_in:
        assert f"EndedBy=output file {missing}/{job}.out" in live.ok("show", "job", str(job))
    assert "Failure=" in live.ok("show", "job", str(program)) and str(missing) in live.ok("show", "job", str(program))


CHECKS = {
    "`scancel 26 26_3 26_[1-4]`": cancel_array_ids,
    "`scancel -u bob`, `--user=bob`": cancel_user,
    "`scancel --me`": cancel_me,
    "`scancel -n x`, `--name`, `--jobname`": cancel_name,
    "`scancel -t PENDING`, `--state`": cancel_state,
    "`scancel -p gpu`, `--partition`": cancel_partition,
    "`scancel -q high`, `--qos`": cancel_qos,
    "`scancel -A physics`, `--account`": cancel_account,
    "`scancel -t PD` (filters, no job id)": (cancel_filters_alone, cancel_filters_alone_open),
    "`scancel` (no id, no filter)": cancel_nothing,
    "`scancel -s USR1 ID`, `--signal`": cancel_signal,
    "`scancel -b`, `--batch`, `-f`, `--full`": cancel_batch_full,
    "`scancel -i`, `--interactive`": cancel_interactive,
    "`scancel --nmae x`": cancel_misspelt,
    "`scontrol update JobId=26 TimeLimit=30`": update_time_limit,
    "`QOS=high`": update_qos,
    "`Nice=100`": update_nice,
    "`Dependency=afterok:12`": update_dependency,
    "`Name=x`, `JobName=x`": update_name,
    "`ArrayTaskThrottle=4`": update_throttle,
    "`StartTime=now+1hour`": update_begin,
    "`Priority=5000`": update_priority,
    "`scontrol update JobId=26 ...` of an array": update_array,
    "every change": update_durable,
    "`sbatch --test-only job.sh`": submit_test_only,
    "`sbatch --qos=\"\"`": submit_empty_qos,
    "`sbatch -o missing/dir/%j.out`": submit_missing_output,
}
RUNS = [(row, check) for row, checks in CHECKS.items()
        for check in (checks if isinstance(checks, tuple) else (checks,))]


def test_every_row_has_a_check():
    assert list(rows()) == list(CHECKS)


@pytest.mark.parametrize("row, check", RUNS, ids=[check.__name__ for _, check in RUNS])
def test_each_row_does_what_it_says(row, check, request, tmp_path):
    fixture = "open_live" if check.__code__.co_varnames[0] == "open_live" else "live"
    check(request.getfixturevalue(fixture), tmp_path)
