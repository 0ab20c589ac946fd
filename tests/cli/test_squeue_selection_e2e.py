"""Which jobs `vipu queue` lists, as squeue selects them (src/squeue/opts.c and print.c, SchedMD/slurm): -j of one
job the controller no longer has, --me against -u, a user no job is known of; and the priority of a held job and
of a running one."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from google.protobuf.timestamp_pb2 import Timestamp

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import lines
from tests.server.test_auth import secure  # noqa: F401 - the fixture
from vipu.cli.queue_listing import MIN_JOB_AGE, kept
from vipu.v1 import job_pb2 as j


def test_one_job_id_the_controller_does_not_have_fails_as_squeue_and_several_list_those_found(server):
    [held] = submit(server, "--ipus", "1", "--hold")
    out = run(server, "vipu", "queue", "-j", "999")
    assert out.returncode == 3 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert "-j/--jobs: job 999" in out.stderr and "Invalid job id specified" in out.stderr
    assert lines(server, "-h", "-o", "%i", "-j", f"999,{held}") == [str(held)]  # squeue filters a list quietly


def test_a_job_that_just_ended_is_kept_but_listed_only_in_its_state_and_a_line_says_so(server):
    [ended] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0.1s")
    [cancelled] = submit(server, "--ipus", "1", "--hold")
    assert run(server, "vipu", "cancel", str(cancelled)).returncode == 0
    wait_for(lambda: show(server, ended)["state"] == "COMPLETED")
    out = run(server, "vipu", "queue", "-h", "-j", str(ended))
    # squeue's default states hold with -j too: nothing on stdout, exit 0 (a script's `| wc -l` says it is gone)
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.startswith(f"vipu: warning: job {ended} ended COMPLETED ") and out.stderr.count("\n") == 1
    assert f"vipu queue -j {ended} -t all lists it for 300 s after its end" in out.stderr
    out = run(server, "vipu", "queue", "-j", f"{ended},{cancelled}")
    assert out.returncode == 0 and out.stdout.split("|")[0].strip() == "JOBID" and out.stdout.count("\n") == 1
    assert out.stderr.count("\n") == 2 and f"job {cancelled} ended CANCELLED" in out.stderr
    assert lines(server, "-h", "-o", "%i %t", "-j", str(ended), "-t", "all") == [f"{ended} CD"]
    assert lines(server, "-h", "-j", str(ended), "-t", "PD") == []  # states asked for: nothing more said


class _Jobs:
    def __init__(self, job):
        self.job = job

    def GetJob(self, request):  # noqa: N802 - the RPC's name
        return self.job


def test_a_job_ended_longer_than_min_job_age_ago_is_one_squeue_no_longer_has():
    now = 10_000.0

    def cli_with(job):
        conn = SimpleNamespace(jobs=_Jobs(job), lookup=lambda method, request: method(request))
        return SimpleNamespace(conn=conn)

    def ended(at: float) -> j.Job:
        stamp = Timestamp()
        stamp.FromNanoseconds(int(at * 1e9))
        return j.Job(id=5, state="COMPLETED", ended=stamp)

    assert kept(cli_with(ended(now - MIN_JOB_AGE + 1)), 5, now)
    assert not kept(cli_with(ended(now - MIN_JOB_AGE - 1)), 5, now)
    assert kept(cli_with(j.Job(id=5, state="PENDING")), 5, now)
    assert not kept(cli_with(None), 5, now)  # refused: no such job


def test_me_and_user_the_later_one_holds_as_in_squeue(server):
    [mine] = submit(server, "--ipus", "1", "--hold")
    [bobs] = submit(server, "--ipus", "1", "--hold", "--user", "bob")
    assert lines(server, "-h", "-o", "%i", "--me", "-u", "bob") == [str(bobs)]
    assert lines(server, "-h", "-o", "%i", "-u", "bob", "--me") == [str(mine)]
    assert lines(server, "-h", "-o", "%i", "--me") == [str(mine)]


def test_a_user_no_job_is_known_of_gets_squeues_error_line_and_the_listing_goes_on(server):
    [bobs] = submit(server, "--ipus", "1", "--hold", "--user", "bob")
    out = run(server, "vipu", "queue", "-h", "-o", "%i", "-u", "nosuch,bob")
    assert out.returncode == 0 and out.stdout.split() == [str(bobs)]  # squeue: "Invalid user", exit 0
    assert out.stderr.count("\n") == 1 and "-u/--user" in out.stderr and "Invalid user: nosuch" in out.stderr
    assert run(server, "vipu", "queue", "-u", "bob").stderr == ""  # a user with jobs: not a word


def test_a_held_job_has_priority_0_and_a_running_one_its_own_as_squeue_shows_them(server):
    [held] = submit(server, "--ipus", "1", "--hold")
    [fill] = submit(server, "--ipus", "64", "--time-limit", "10m")
    [waiting] = submit(server, "--ipus", "1", "--time-limit", "1m")
    wait_for(lambda: show(server, fill)["state"] == "RUNNING")
    rows = dict(line.split() for line in lines(server, "-h", "-o", "%i %Q"))
    assert rows[str(held)] == "0" and int(rows[str(waiting)]) > 0
    assert int(rows[str(fill)]) > 0  # a running job keeps the priority it started with, as squeue shows it
    assert run(server, "vipu", "release", str(held)).returncode == 0
    assert int(dict(line.split() for line in lines(server, "-h", "-o", "%i %Q"))[str(held)]) > 0


def test_me_under_secure_is_the_access_keys_user_and_a_hidden_user_is_not_an_unknown_one(secure):
    """Regressions (walks of issue 22): `vipu queue --me` listed nobody's jobs under --secure, where `vipu cancel
    --me` found the key owner's: --me is the caller as the controller knows it. `vipu queue -u alice` by another
    user said alice was unknown: her jobs are hidden, not absent, and squeue says nothing of them."""
    server, as_, admin_key, new_user = secure
    alice = as_(new_user("alice"))
    out = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable", env=alice)
    assert out.returncode == 0, out.stderr
    alice_job = out.stdout.strip()
    assert lines(server, "-h", "-o", "%i %u", "--me", env=alice) == [f"{alice_job} alice"]
    assert lines(server, "-h", "-o", "%i", "--me", env=as_(admin_key)) == []  # the admin's own: none
    bob = as_(new_user("bob"))
    assert lines(server, "-h", "-o", "%i", "-u", "alice", env=bob) == []  # lines() checks stderr is empty
    out = run(server, "vipu", "queue", "-h", "-u", "nosuch,alice", env=bob)
    assert out.returncode == 0 and out.stdout == "" and out.stderr.count("\n") == 1
    assert "Invalid user: nosuch" in out.stderr
    # -j of alice's job by bob: refused as hers (squeue: "Access/permission denied"), not said to have ended
    out = run(server, "vipu", "queue", "-j", alice_job, env=bob)
    assert out.returncode != 0 and "alice" in out.stderr and "ended" not in out.stderr, out.stderr


@pytest.mark.parametrize(("args", "said"), [
    (["queue", "-j", ""], "vipu: error: -j/--jobs is empty: give job ids (e.g. -j 26,27_1), or leave it out"),
    (["queue", "-t", ""], "vipu: error: -t/--states is empty: give states (e.g. -t PD,R, or all), or leave it out"),
    (["history", "-j", ","], "vipu: error: -j/--jobs is empty: give job ids"),
    (["history", "-s", ""], "vipu: error: -s/--state is empty: give states"),
    (["history", "-o", ""], "vipu: error: -o/--format '' names no field; give e.g. -o/--format JobID,"),
    (["priority", "-j", ""], "vipu: error: -j/--jobs is empty"),
    (["priority", "-o", ""], "vipu: error: -o/--format '' names no field"),
    (["info", "-o", ""], "vipu: error: -o/--format '' names no field"),
    (["cancel", "-n", ""], "vipu: error: -n/--name is empty: give a job name (e.g. -n train), or leave it out"),
    (["cancel", "-p", ""], "vipu: error: -p/--partition is empty: give allocations"),
    (["cancel", "-q", ","], "vipu: error: -q/--qos is empty: give QOS names"),
    (["cancel", "-A", ""], "vipu: error: -A/--account is empty: give accounts"),
    (["submit", "--wrap", "true", "--ipus", "1", "-D", ""], "vipu: error: -D/--chdir is empty: give a directory"),
    (["update", "job", "7", "Name="], "vipu: error: Name= is empty: give the job a name, e.g. Name=job1"),
    (["update", "job", "7", "-J", " "], "vipu: error: -J/--job-name is empty: give the job a name"),
])
def test_an_empty_value_is_refused_naming_the_flag_not_read_as_no_filter(args, said):
    """Regression (walk of issue 22): `vipu queue -j ''` listed every job and `vipu history -o ''` printed the default
    table, while an empty -u was refused. Refused before any call: no controller is needed."""
    out = run(None, "vipu", *args, env={**os.environ, "VIPU_CLI_API_PORT": "9"})
    assert (out.returncode, out.stdout, out.stderr.count("\n")) == (2, "", 1), out.stderr
    assert out.stderr.startswith(said)
