"""`vipu history` takes what Slurm users type for sacct (man sacct), against a live controller; a run that
`vipu requeue` stopped while it ran is a REQUEUED row with -D, as sacct shows it."""

from __future__ import annotations

import pwd

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import refused

QUICK = ("--time-limit", "1m", "--duration", "0.2s")


def rows(server, *args: str, env=None) -> list[str]:
    out = run(server, "vipu", "history", *args, env=env)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return out.stdout.splitlines()


@pytest.fixture
def ended(server, tmp_path):
    """quick (alice, completed), failed (bob, exit 3), an array of two (completed), and looped: requeued while it
    ran, then cancelled in its second run."""
    [quick] = submit(server, "--name", "quick", "--ipus", "4", "--user", "alice", *QUICK)
    failing = tmp_path / "fail.yaml"
    failing.write_text("name: failed\nuser: bob\nipus: 1\ntime_limit: 1m\n"
                       "workload: {kind: sleep, duration: 0.2s, exit_code: 3}\n")
    [failed] = submit(server, str(failing))
    array = submit(server, "--name", "sweep", "--ipus", "1", "--array", "0-1", *QUICK)[0]
    [looped] = submit(server, "--name", "looped", "--ipus", "16", "--time-limit", "10m")
    wait_for(lambda: show(server, looped)["state"] == "RUNNING")
    assert run(server, "vipu", "requeue", str(looped)).returncode == 0
    wait_for(lambda: (s := show(server, looped))["state"] == "RUNNING" and s["requeue_count"] == 1)
    assert run(server, "vipu", "cancel", str(looped)).returncode == 0
    wait_for(lambda: all(show(server, j)["state"] in ("COMPLETED", "FAILED", "CANCELLED")
                         for j in (quick, failed, array, array + 1, looped)))
    return server, quick, failed, array, looped


def test_a_run_requeued_while_running_is_a_requeued_row_with_duplicates(ended):
    """Regression: `vipu history -D` left out the run that `vipu requeue` stopped while RUNNING."""
    server, *_, looped = ended
    by = f"CANCELLED by {pwd.getpwnam(show(server, looped)['user']).pw_uid}"  # its user cancelled it: sacct's requid
    assert rows(server, "-j", str(looped), "-P", "-n", "-o", "JobID,State,ExitCode") == [f"{looped}|{by}|0:15"]
    runs = rows(server, "-D", "-j", str(looped), "-P", "-n", "-o", "JobID,State,ExitCode,Restarts,Start,End")
    first, second = (r.split("|") for r in runs)
    assert first[:4] == [str(looped), "REQUEUED", "0:15", "1"] and second[:3] == [str(looped), by, "0:15"]
    assert first[4] <= first[5] <= second[4] <= second[5]  # the stopped run, then the one cancelled
    assert rows(server, "-D", "-s", "RQ", "-P", "-n", "-o", "JobID") == [str(looped)]
    assert rows(server, "-s", "REQUEUED", "-n") == []  # without -D, each job as its latest run left it


def test_jobs_states_users_and_time_windows(ended):
    server, quick, failed, array, looped = ended
    assert sorted(rows(server, "-j", f"{quick},{array}_1", "-P", "-n", "-o", "JobID")) == sorted(
        [str(quick), f"{array}_1"])
    assert sorted(rows(server, "--jobs", str(array), "-P", "-n", "-o", "JobID")) == [f"{array}_0", f"{array}_1"]
    assert rows(server, "-s", "f", "-P", "-n", "-o", "JobID,State,ExitCode") == [f"{failed}|FAILED|3:0"]
    assert sorted(rows(server, "--state", "CA,failed", "-P", "-n", "-o", "JobID")) == sorted([str(failed), str(looped)])
    assert rows(server, "-u", "alice,bob", "-s", "CD", "-P", "-n", "-o", "User") == ["alice"]
    every = rows(server, "-P", "-n", "-o", "JobID")
    assert len(every) == 5
    assert rows(server, "-S", "now-1hour", "-E", "now", "-P", "-n", "-o", "JobID") == every
    assert rows(server, "-S", "now+1hour", "-E", "now+2hours", "-n") == [] and rows(server, "-E", "2000-01-01", "-n") == []
    assert rows(server, "--starttime", "midnight", "--endtime", "tomorrow", "-P", "-n", "-o", "JobID") == every
    assert rows(server, "-S", "now-1hour", "--limit", "2", "-P", "-n", "-o", "JobID") == every[-2:]
    assert rows(server, "--name", "quick,looped", "-P", "-n", "-o", "JobName") == ["quick", "looped"]
    assert rows(server, "-a", "-L", "-P", "-n", "-o", "JobID") == every  # every user's, the one cluster's
    assert rows(server, "-l", "-j", str(quick), "-P")[0] == (
        "JobID|JobIDRaw|JobName|Partition|AllocCPUS|Elapsed|State|ExitCode|ReqTRES|AllocTRES")
    fields = rows(server, "-e")
    assert fields[0].split() == ["Account", "AllocCPUS", "AllocNodes", "AllocTRES"]
    assert {"Comment", "SubmitLine", "UID", "User", "WorkDir"} <= set(" ".join(fields).split())
    out = run(server, "vipu", "history", "--units", "G", "-n", "-j", str(quick))
    assert out.returncode == 0 and out.stderr.count("\n") == 1 and "--units changes nothing" in out.stderr


def test_sacct_formats_and_parsable_output(ended):
    server, quick, failed, array, looped = ended
    fixed = rows(server, "-j", str(quick), "-o", "JobID%-8,JobName%6,State,NNodes,NCPUS,Timelimit")
    assert fixed == ["JobID    JobNam      State   NNodes      NCPUS  Timelimit ",
                     "-------- ------ ---------- -------- ---------- ---------- ",
                     f"{quick:<8}  quick  COMPLETED        1          4   00:01:00 "]
    listed = rows(server, "-j", str(quick), "-P", "-n", "-o", "AllocTRES,ReqTRES,NodeList,Partition,Elapsed,User")
    [(alloc, req, nodes, partition, took, user)] = [r.split("|") for r in listed]
    assert alloc == req == "cpu=4,node=1,gres/ipu=4" and nodes.startswith("ag") and partition == "default"
    assert took.startswith("00:00:") and user == "alice"
    assert rows(server, "-j", str(quick), "-p", "-o", "JobID,State") == ["JobID|State|", f"{quick}|COMPLETED|"]
    assert rows(server, "-j", str(quick), "-P", "--delimiter", ";", "-o", "jobid,state") == [
        "JobID;State", f"{quick};COMPLETED"]
    assert rows(server, "-j", str(quick), "-b", "-P", "-n") == [f"{quick}|COMPLETED|0:0"]
    assert rows(server, "-j", str(quick), "-X", "-P", "-n") == rows(server, "-j", str(quick), "-P", "-n")
    assert rows(server, "-j", str(quick), "-P", "-n")[0].split("|")[:4] == [str(quick), "quick", "alice", "COMPLETED"]
    env = {**server.env(), "SACCT_FORMAT": "JobID,JobName"}
    assert rows(server, "-j", str(quick), "-P", env=env) == ["JobID|JobName", f"{quick}|quick"]
    table = rows(server, "-j", str(quick), "-n")  # no -o: the table `vipu history` has always printed
    assert [c.strip() for c in table[0].split("|")][:4] == [str(quick), "quick", "alice", "COMPLETED"]


@pytest.mark.parametrize(("args", "said"), [
    (["-o", "JobID,Colour"], "vipu: error: -o/--format: 'Colour' is not a field; use any of Account,"),
    (["-o", "JobName%wide"], "vipu: error: -o/--format: 'JobName%wide' has a width that is not a number"),
    (["-S", "yesterday"], "vipu: error: -S/--starttime: 'yesterday' is not a time; give YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS], MM/DD or MM/DD/YY"),
    (["-E", "now-3fortnights"], "vipu: error: -E/--endtime: 'now-3fortnights' has the unit 'fortnights'"),
    (["-S", "tomorrow", "-E", "today"], "vipu: error: -S/--starttime 'tomorrow' is after -E/--endtime 'today'"),
    (["-s", "DONE"], "vipu: error: -s/--state: 'DONE' is not a job state"),
    (["-j", "4.1"], "vipu: error: -j/--jobs: '4.1' is not a job id"),
    (["-p", "-P"], "vipu: error: -p/--parsable and -P/--parsable2 both given"),
    (["-l", "-o", "JobID"], "vipu: error: -l/--long and -o/--format both given"),
    (["--units", "X"], "vipu: error: --units 'X': give one of K, M, G, T, P"),
    (["--name", ""], "vipu: error: --name is empty"),
])
def test_a_bad_value_is_one_line_naming_the_flag_and_exit_2(unchanged_server, args, said):
    assert refused(unchanged_server, "history", *args).startswith(said)


def test_derived_exit_code_and_a_jobs_files(ended):
    """sacct's DerivedExitCode is its srun steps' highest exit code, and no job here runs a step: 0:0 beside the
    program's own ExitCode; WorkDir, StdIn, StdOut and StdErr as `vipu show job` gives them (blank: none)."""
    server, quick, failed, *_ = ended
    codes = rows(server, "-j", f"{quick},{failed}", "-P", "-n", "-o", "JobID,ExitCode,DerivedExitCode")
    assert sorted(codes) == sorted([f"{quick}|0:0|0:0", f"{failed}|3:0|0:0"])
    [wrapped] = submit(server, "--wrap", "true", "--ipus", "1", "-t", "1", "-o", "out-%j.txt", "-e", "err-%j.txt")
    wait_for(lambda: show(server, wrapped)["state"] == "COMPLETED")
    folder = server.state_dir.parent  # where run() types its commands
    [files] = rows(server, "-j", str(wrapped), "-P", "-n", "-o", "WorkDir,StdIn,StdOut,StdErr,DerivedExitCode")
    assert files.split("|") == [str(folder), "/dev/null", f"{folder}/out-{wrapped}.txt", f"{folder}/err-{wrapped}.txt",
                                "0:0"]
    [sleeper] = rows(server, "-j", str(quick), "-P", "-n", "-o", "WorkDir,StdIn,StdOut,StdErr")
    assert sleeper.split("|") == [str(folder), "", "", ""]  # a sleep writes no file: sacct's blank
    assert rows(server, "-j", str(quick), "-n", "-o", "Derived")[0].strip() == "0:0"  # a prefix, width 15


def test_a_cancelled_job_says_by_whom_as_sacct_does(server):
    """sacct's State is "CANCELLED by UID", the canceller's uid (slurmctld's requid), in every output form (-P too;
    its fixed width cuts it to CANCELLED+); without --secure a caller is a name, whose uid is its account's on the
    controller's machine, and a name with no account there is plain CANCELLED, as sacct shows an unknown requid."""
    [mine, ghosts] = submit(server, "--ipus", "1", "--hold"), submit(server, "--ipus", "1", "--hold")
    me = pwd.getpwnam(show(server, mine[0])["user"]).pw_uid
    assert run(server, "vipu", "cancel", str(mine[0])).returncode == 0
    ghost = {**server.env(), "VIPU_CLI_API_USER_ID": "no-such-account-here"}
    assert run(server, "vipu", "cancel", str(ghosts[0]), env=ghost).returncode == 0
    listed = rows(server, "-P", "-n", "-o", "JobID,State")
    assert listed == [f"{mine[0]}|CANCELLED by {me}", f"{ghosts[0]}|CANCELLED"]
    assert rows(server, "-n", "-o", "State", "-j", str(mine[0])) == ["CANCELLED+ "]  # sacct's width 10
    assert rows(server, "-n", "-s", "CA", "-P", "-o", "JobID") == [str(mine[0]), str(ghosts[0])]
