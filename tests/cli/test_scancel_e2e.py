"""`vipu cancel` as scancel: filters that narrow the jobs named or choose jobs alone, --signal to a running
program, and an unknown option named as one; through the installed CLI and a live controller."""

from __future__ import annotations

import json

import grpc

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc


def states(server, *ids: int) -> list[str]:
    return [show(server, i)["state"] for i in ids]


def test_a_user_filter_narrows_the_jobs_named_and_filters_alone_choose_jobs(server):
    """Regression: `vipu cancel -u bob 45` cancelled carol's job 45 and every job of bob's."""
    [carol] = submit(server, "--ipus", "64", "--time", "10", "--user", "carol")  # a hold workload: runs till cancelled
    wait_for(lambda: states(server, carol) == ["RUNNING"])
    x, y = (submit(server, "--ipus", "4", "--time", "5", "--user", "bob", "--name", n)[0] for n in ("x", "y"))
    out = run(server, "vipu", "cancel", "-u", "bob", str(carol))
    assert out.returncode == 3, out.stderr
    assert f"job {carol} does not match user bob (its user is carol, not bob); nothing to cancel" in out.stderr
    assert states(server, carol, x, y) == ["RUNNING", "PENDING", "PENDING"]

    out = run(server, "vipu", "cancel", "--name", "x", "-u", "bob")  # --name was "'--name' is not a job id"
    assert (out.returncode, out.stdout) == (0, f"Job {x} cancelled: CANCELLED\n"), out.stderr
    out = run(server, "vipu", "cancel", "-t", "PD", "--json")
    assert [(j["id"], j["state"]) for j in json.loads(out.stdout)] == [(y, "CANCELLED")]
    assert states(server, carol) == ["RUNNING"]
    out = run(server, "vipu", "cancel", "-n", "nothing,none")
    assert out.returncode == 0 and "no active job matches -n nothing,none; nothing was done" in out.stderr


def test_an_array_named_with_a_state_filter_and_the_other_filters(server):
    [first, *rest] = submit(server, "--ipus", "64", "--time", "10", "--array", "0-2", "-A", "physics")
    wait_for(lambda: states(server, first) == ["RUNNING"])
    out = run(server, "vipu", "cancel", "-t", "PD", str(first))
    assert out.returncode == 0 and out.stdout.startswith(f"Array job {first}: 2 tasks cancelled"), out.stderr
    assert states(server, first, *rest) == ["RUNNING", "CANCELLED", "CANCELLED"]
    for flags, code in ((["-q", "high"], 3), (["-p", "other"], 3), (["-A", "chemistry"], 3), (["-t", "R,CD"], 2)):
        out = run(server, "vipu", "cancel", *flags, str(first))
        assert out.returncode == code and out.stderr.count("\n") == 1, (flags, out.stderr)
    out = run(server, "vipu", "cancel", "-q", "normal", "-p", "default", "-A", "physics", "--me", f"{first}_0")
    assert out.returncode == 0 and states(server, first) == ["CANCELLED"], out.stderr


def test_bad_cancels_name_the_problem(server):
    for args, words in ((["cancel"], "name job ids, or choose jobs with filters"),
                        (["cancel", "--nmae", "x"], "No such option: --nmae"),
                        (["cancel", "-t", "COMPLETED"], "-t/--state COMPLETED: only active jobs can be cancelled"),
                        (["cancel", "-t", "CD,R"], "-t/--state COMPLETED: only active jobs can be cancelled"),
                        (["cancel", "-t", "XX"], "-t/--state: 'XX' is not a job state"),
                        (["cancel", "-s", "USR9", "1"], "-s/--signal 'USR9' is not a signal"),
                        (["cancel", "-s", "65", "1"], "signals are 1 to 64")):
        out = run(server, "vipu", *args)
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)


def test_a_signal_reaches_a_running_program_which_goes_on(server, tmp_path):
    script = tmp_path / "trap.sh"
    script.write_text("#!/bin/bash\ntrap 'echo got USR1; exit 0' USR1\necho ready\nwhile true; do sleep 0.05; done\n")
    output = tmp_path / "trap.out"
    [job] = submit(server, "--ipus", "1", "--time", "5", "-D", str(tmp_path), "-o", str(output), str(script))
    [sleeper] = submit(server, "--ipus", "1", "--time", "5", "--duration", "10m")
    wait_for(lambda: output.exists() and "ready" in output.read_text() and states(server, sleeper) == ["RUNNING"])
    out = run(server, "vipu", "cancel", "-b", "-f", "--signal", "usr1", str(job))  # -b, -f: accepted
    assert (out.returncode, out.stdout) == (0, f"Job {job} signalled (SIGUSR1): RUNNING\n"), out.stderr
    wait_for(lambda: states(server, job) == ["COMPLETED"])  # the program's trap ended it, exit 0
    assert "got USR1" in output.read_text()
    out = run(server, "vipu", "cancel", "-s", "USR1", str(sleeper))
    assert out.returncode == 4 and f"job {sleeper} runs a sleep workload" in out.stderr
    assert "no process to signal" in out.stderr and states(server, sleeper) == ["RUNNING"]
    [held] = submit(server, "--ipus", "1", "--time", "5", "--hold", str(script))
    out = run(server, "vipu", "cancel", "-s", "USR1", str(held))
    assert out.returncode == 4 and f"job {held} is PENDING; only a running job's program can be signalled" in out.stderr
    assert run(server, "vipu", "cancel", str(held)).returncode == 0
    out = run(server, "vipu", "cancel", "-s", "USR1", "--me")  # filters alone: running programs only
    assert out.returncode == 0 and "no running program matches --me" in out.stderr
    assert jobs(server)[sleeper]["job_state"] == ["RUNNING"]
    out = run(server, "vipu", "cancel", "-s", "KILL", str(sleeper))  # a cancel, as scancel's (walk22d defect 8)
    assert (out.returncode, out.stdout) == (0, f"Job {sleeper} cancelled: CANCELLED\n"), out.stderr
    [other] = submit(server, "--ipus", "1", "--time", "5", "--hold")
    with grpc.insecure_channel(server.address) as channel:  # the API's callers too
        reply = job_pb2_grpc.JobServiceStub(channel).CancelJobs(j.CancelJobsRequest(ids=[other], signal=9))
    assert [(x.id, x.state) for x in reply.jobs] == [(other, "CANCELLED")]
