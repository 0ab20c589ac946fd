"""sacct's UID, Comment and SubmitLine, squeue's %k and show job's Comment= and UserId=NAME(UID): kept with the job
from its submit, through a kill -9 of the controller."""

from __future__ import annotations

import json
import pwd

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import submit
from tests.cli.test_squeue_e2e import refused

COMMENT = "nightly, run 3 of 7"


def line(server, *args: str) -> str:
    out = run(server, "vipu", *args)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return out.stdout


def test_uid_comment_and_submit_line_are_kept_and_survive_a_kill_9(server):
    [job] = submit(server, "--ipus", "1", "--comment", COMMENT, "--name", "c")  # a hold workload: runs on
    [bare] = submit(server, "--ipus", "1")
    user = run(server, "vipu", "show", "job", str(job)).stdout.split("UserId=")[1].split("(")[0]
    uid = pwd.getpwnam(user).pw_uid  # without --secure: the account of the job's user's name on this machine
    submitted = f"vipu submit --json --ipus 1 --comment {COMMENT} --name c"  # argv joined by spaces, as sbatch's
    server.restart()  # kill -9, then start again from the state database
    fields = "JobID,UID,Comment,SubmitLine%60"
    assert line(server, "history", "-j", f"{job},{bare}", "-P", "-n", "-o", fields).splitlines() == [
        f"{job}|{uid}|{COMMENT}|{submitted}", f"{bare}|{uid}||vipu submit --json --ipus 1"]
    # sacct's widths: UID 6, Comment 14 (a longer value cut with +), SubmitLine 20
    assert line(server, "history", "-j", str(job), "-n", "-o", "UID,Comment,SubmitLine") == (
        f"{uid:>6} {'nightly, run +':>14} {'vipu submit --json +':>20} \n")
    assert sorted(line(server, "queue", "-h", "-o", "%i|%k|").splitlines()) == sorted([
        f"{bare}|(null)|", f"{job}|{COMMENT}|"])  # squeue's (null) for a job without one
    assert line(server, "queue", "-h", "-j", str(job), "-O", "JobID:6,Comment:8") == f"{job:<6}nightly,\n"
    shown = line(server, "show", "job", str(job)).splitlines()
    assert f"UserId={user}({uid})" in shown and f"Comment={COMMENT}" in shown
    assert not any(s.startswith("Comment=") for s in line(server, "show", "job", str(bare)).splitlines())
    # squeue --json's user_id, comment and submit_line (data_parser v0.0.44), "" for a string not set; no uid
    # known (no account of the name here): null
    [stranger] = submit(server, "--ipus", "1", "--user", "no-such-account-here")
    listed = {x["job_id"]: x for x in json.loads(line(server, "queue", "--json"))["jobs"]}
    assert [(x["user_id"], x["comment"], x["submit_line"]) for x in (listed[job], listed[bare])] == [
        (uid, COMMENT, submitted), (uid, "", "vipu submit --json --ipus 1")]
    assert listed[stranger]["user_id"] is None
    assert list(listed[job]) == sorted(listed[job])  # squeue's keys in name order
    # `vipu history --json` is show job's shape: the uid beside the user, comment and submit_line in its spec
    ended = json.loads(line(server, "history", "--json", "-s", "R", "-j", str(job)))
    assert [(x["uid"], x["spec"]["comment"], x["spec"]["submit_line"]) for x in ended] == [
        (uid, COMMENT, submitted)]


def test_a_comment_past_slurms_limit_is_refused_naming_it(server):
    said = refused(server, "submit", "--ipus", "1", "--comment", "x" * 1025)
    assert said == "vipu: error: --comment: 1,025 characters long; give at most 1,024"  # slurmctld's limit
    [job] = submit(server, "--ipus", "1", "--comment", "x" * 1024)
    assert line(server, "history", "-j", str(job), "-P", "-n", "-o", "Comment") == "x" * 1024 + "\n"
    # sacct's fields with no meaning here are refused by name, with why
    said = refused(server, "history", "-o", "JobID,wckey%20")
    assert said.startswith("vipu: error: -o/--format: WCKey has no value here: a job here has no workload"
                           " characterization key"), said
    assert "no job runs in a reservation here" in refused(server, "history", "-o", "Reservation")
    assert "no job step statistics" in refused(server, "history", "-o", "MaxRSS")
