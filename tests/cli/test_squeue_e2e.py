"""`vipu queue` takes what Slurm users type for squeue (man squeue), against a live controller: formats, filters,
sorting, --start, -i and squeue's --json."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, submit, wait_for
from tests.conftest import console_script

CTIME = re.compile(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}")  # squeue's time stamp (ctime)


def lines(server, *args: str, env=None) -> list[str]:
    out = run(server, "vipu", "queue", *args, env=env)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return out.stdout.splitlines()


def refused(server, *args: str, env=None) -> str:
    """The one line a refused `vipu ARGS` prints, having checked it exited 2 and printed nothing else."""
    out = run(server, "vipu", *args, env=env)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    return out.stderr.rstrip("\n")


def nodes_of(server, job: int) -> str:
    """The job's IPU-Machines as Slurm writes a node list, from `vipu list ipus`."""
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    agents = sorted({i["agent"] for i in ipus if i["partition"] == f"slurm_{job}"})
    return agents[0] if len(agents) == 1 else f"ag[{agents[0][2:]}-{agents[-1][2:]}]"


def run_user(server, job: int) -> str:
    """Who the job runs as: the CLI's own user for a job submitted without --user."""
    return jobs(server)[job]["user_name"]


@pytest.fixture
def queued(server):
    """fill (16 IPUs, runs until cancelled, the caller's), big (64 IPUs, bob: waits for Resources) and an array of
    three held tasks (carol)."""
    [fill] = submit(server, "--name", "fill", "--ipus", "16", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[fill]["job_state"] == ["RUNNING"])
    [big] = submit(server, "--name", "big", "--ipus", "64", "--time-limit", "5m", "--user", "bob")
    array = submit(server, "--name", "sweep", "--ipus", "1", "--time-limit", "1m", "--array", "0-2", "--hold",
                   "--user", "carol")[0]
    wait_for(lambda: jobs(server)[big]["state_reason"] == "Resources")
    return server, fill, big, array


def test_percent_formats_show_slurm_fields_with_ipus_as_cpus_and_machines_as_nodes(queued):
    server, fill, big, array = queued
    got = lines(server, "-o", "%.8i %j %u %t %C %D %P %N %R %K")
    assert got == ["   JOBID NAME USER ST CPUS NODES PARTITION NODELIST NODELIST(REASON) ARRAY_TASK_ID",
                   f"{fill:>8} fill {run_user(server, fill)} R 16 4 default {nodes_of(server, fill)}"
                   f" {nodes_of(server, fill)} N/A",
                   f"{big:>8} big bob PD 64 16 default  (Resources) N/A",
                   f"{f'{array}_[0-2]':>8} sweep carol PD 1 1 default  (JobHeldUser) 0-2"]
    assert lines(server, "-h", "-r", "-o", "%i|%A|%F|%K", "-j", str(array)) == [
        f"{array}_{t}|{array + t}|{array}|{t}" for t in range(3)]
    widths = lines(server, "-o", "%-8j|%.4T|%3u", "-j", str(big))
    assert widths == ["NAME    |STAT|USE", "big     |PEND|bob"]  # a size cuts a longer value, as squeue's does
    times = lines(server, "-h", "-o", "%M %l %L %S %e %V %Q %r %q %E %a %b", "-j", f"{fill},{big}")
    used, limit, left, start, end, submitted, priority, reason, qos, dependency, account, gres = times[0].split()
    assert limit == "10:00" and reason == "None" and qos == "normal" and gres == "gres/ipu:4"
    assert re.fullmatch(r"\d+:\d\d", used) and re.fullmatch(r"\d+:\d\d", left)
    assert int(priority) > 0  # the priority it started with, as squeue keeps a running job's
    assert start <= end and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", submitted)
    assert (dependency, account) == ("(null)", "(null)")
    pending = times[1].split()
    assert pending[3] != "N/A" and int(pending[6]) > 0 and pending[7] == "Resources"  # its expected start, priority
    # %o and %Z: the command as show job's Command= says it, and the folder it runs in (where it was submitted)
    command, workdir = lines(server, "-h", "-o", "%o|%Z", "-j", str(fill))[0].split("|")
    assert command == "(hold: until cancelled or its time limit)" and os.path.isabs(workdir)
    assert lines(server, "-h", "-O", "Command:|,WorkDir", "-j", str(fill)) == [f"{command}|{workdir}"]


def test_named_formats_filters_and_states(queued):
    server, fill, big, array = queued
    assert lines(server, "-O", "JobID:6,Name:.6,StateCompact:3,IPUs:5", "-j", f"{fill},{array}_1") == [
        "JOBID   NAMEST IPUS ", f"{fill:<6}  fillR  16   ", f"{array + 1:<6} sweepPD 1    "]
    ids = {int(line.split()[0].split("_")[0]) for line in lines(server, "-h", "-o", "%i", "-u", "bob,carol")}
    assert ids == {big, array}
    assert lines(server, "-h", "-o", "%i", "--me") == [str(fill)]  # the caller's own: fill was submitted as it
    assert lines(server, "-h", "-o", "%i", "--users", "bob", "-u", "carol", "-t", "R") == []
    for flag in ("-t", "--states", "--state"):
        assert lines(server, "-h", "-o", "%i", flag, "r") == [str(fill)]
    assert lines(server, "-h", "-o", "%t", "-t", "PENDING,running") == ["R", "PD", "PD"]
    assert lines(server, "-h", "-o", "%i", "-t", "CD") == []
    run(server, "vipu", "cancel", f"{array}_0")
    # an ended state lists what ended in the last 300 s (Slurm's MinJobAge); all: every state
    assert lines(server, "-h", "-o", "%i %T", "-t", "CA") == [f"{array}_0 CANCELLED"]
    assert len(lines(server, "-h", "-o", "%i", "-t", "all", "-r")) == 5  # fill, big, two held tasks, the cancelled
    assert lines(server, "-h", "-o", "%i", "-j", f"{array}_[1-2]") == [f"{array}_[1-2]"]


def test_long_sort_and_start(queued):
    server, fill, big, array = queued
    long = lines(server, "-l")
    assert CTIME.fullmatch(long[0]) and long[1].split() == ["JOBID", "PARTITION", "NAME", "USER", "STATE", "TIME",
                                                            "TIME_LIMI", "NODES", "NODELIST(REASON)"]
    assert [line.split()[4] for line in long[2:]] == ["RUNNING", "PENDING", "PENDING"]
    assert lines(server, "-h", "-o", "%A", "-S", "-A") == [str(array), str(big), str(fill)]
    assert lines(server, "-h", "-o", "%t %A", "-S", "t,-A") == [f"PD {array}", f"PD {big}", f"R {fill}"]
    assert lines(server, "-h", "-o", "%u", "-S", "-u") == sorted([run_user(server, fill), "carol", "bob"], reverse=True)
    start = lines(server, "--start")
    assert start[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME", "NODES", "SCHEDNODES",
                                "NODELIST(REASON)"]
    assert [line.split()[0] for line in start[1:]] == [str(big), f"{array}_[0-2]"]  # known start first, then N/A
    assert start[1].split()[5] != "N/A" and start[2].split()[5] == "N/A"


def test_squeue_format_from_the_environment_and_flags_over_it(queued):
    server, fill, big, array = queued
    env = {**server.env(), "SQUEUE_FORMAT": "%i:%t", "SQUEUE_SORT": "-i"}
    assert lines(server, "-h", env=env) == [f"{array}_[0-2]:PD", f"{big}:PD", f"{fill}:R"]
    assert lines(server, "-h", "-o", "%j", "-S", "j", env=env) == ["big", "fill", "sweep"]
    env2 = {**server.env(), "SQUEUE_FORMAT2": "Name:6"}
    assert lines(server, "-h", "-j", str(big), env=env2) == ["big   "]


def test_json_is_shaped_as_squeue_json(queued):
    server, fill, big, array = queued
    out = run(server, "vipu", "queue", "--json", "-o", "%i")
    doc = json.loads(out.stdout)
    assert set(doc) == {"jobs", "last_backfill", "last_update", "meta", "errors", "warnings"}
    assert doc["errors"] == [] and doc["warnings"] == [
        {"description": "-o/--format is ignored with --json, as squeue ignores it", "source": "vipu queue"}]
    assert doc["meta"]["command"] == ["queue", "--json", "-o", "%i"] and doc["meta"]["slurm"]["cluster"] == "bow-pod64"
    by_id = {x["job_id"]: x for x in doc["jobs"]}
    assert sorted(by_id) == [fill, big, array, array + 1, array + 2]  # a task each
    running = by_id[fill]
    assert running["job_state"] == ["RUNNING"] and running["cpus"] == {"set": True, "infinite": False, "number": 16}
    assert running["node_count"]["number"] == 4 and running["nodes"] == nodes_of(server, fill)
    assert running["partition"] == "default" and running["vipu_partition"] == f"slurm_{fill}"
    assert running["time_limit"]["number"] == 10 and running["time_limit_s"] == 600
    assert running["start_time"]["set"] and running["end_time"]["number"] == running["start_time"]["number"] + 600
    assert running["exit_code"]["status"] == ["PENDING"] and running["tres_alloc_str"] == "cpu=16,node=4,gres/ipu=16"
    waiting = by_id[big]
    assert waiting["state_reason"] == "Resources" and waiting["start_time"]["set"]  # the expected start
    assert waiting["priority"]["number"] > 0 and isinstance(waiting["priority"]["number"], int)
    task = by_id[array + 2]
    assert (task["array_job_id"]["number"], task["array_task_id"]["number"], task["hold"]) == (array, 2, True)
    assert not task["start_time"]["set"] and task["user_name"] == "carol"


def test_noheader_on_an_empty_queue_prints_nothing_at_all(unchanged_server):
    """Regression: `vipu queue --no-header` printed a blank line (`| wc -l` gave 1)."""
    server = unchanged_server  # its queue stays empty: the module's other tests on it are refused
    for args in (["-h"], ["--noheader"], ["--no-header"], ["-h", "-o", "%i"], ["-h", "-l"], ["-h", "--start"]):
        out = run(server, "vipu", "queue", *args)
        assert out.returncode == 0 and out.stdout == "", (args, out.stdout)
    assert run(server, "vipu", "queue", "-o", "%.5i %j").stdout == "JOBID NAME\n"


@pytest.mark.parametrize(("args", "said"), [
    (["-o", "%.5i %z"], "vipu: error: -o/--format: %z is not a field here; use one of %A %a %B %b"),
    (["-O", "JobID,Colour"], "vipu: error: -O/--Format: 'Colour' is not a field here"),
    (["-o", "%i", "-O", "JobID"], "vipu: error: -o/--format and -O/--Format both given; give one of them"),
    (["-l", "-o", "%i"], "vipu: error: -l/--long and a format both given"),
    (["-S", "i,z"], "vipu: error: -S/--sort: 'z' in 'i,z' is not a sort key"),
    (["-j", "12x"], "vipu: error: -j/--jobs: '12x' is not a job id"),
    (["-j", "3_[5-1]"], "vipu: error: -j/--jobs: '3_[5-1]': "),
    (["-t", "WAITING"], "vipu: error: -t/--states: 'WAITING' is not a job state; give names or codes"),
    (["-i", "0"], "vipu: error: Invalid value for '--iterate' / '-i': 0 is not in the range x>=1"),
])
def test_a_bad_value_is_one_line_naming_the_flag_and_exit_2(unchanged_server, args, said):
    assert refused(unchanged_server, "queue", *args).startswith(said)


def test_a_bad_format_in_the_environment_names_the_variable(unchanged_server):
    server = unchanged_server
    said = refused(server, "queue", env={**server.env(), "SQUEUE_FORMAT": "%z"})
    assert said.startswith("vipu: error: SQUEUE_FORMAT: %z is not a field here")


def as_from_a_terminal() -> None:
    """A child's signals as a user's shell leaves them: SIGINT handled by default and not blocked. Why: `vipu queue
    -i` run by the suite twice outlived its Ctrl-C by 30 s, only in full loaded runs, and a disposition or mask
    inherited from the test worker is one way a Ctrl-C never arrives."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def interrupted(proc: subprocess.Popen) -> int:
    """Ctrl-C to `proc`; its exit code, or a failure naming its signal state if it is still running 30 s later."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{proc.args} still running 30 s after Ctrl-C: {signals_of(proc.pid)}") from None
    finally:
        proc.kill()


def signals_of(pid: int) -> str:
    """The kernel's view of a process's signals, for a failure's message."""
    try:
        status = " ".join(line.strip() for line in open(f"/proc/{pid}/status") if line.startswith(("Sig", "State")))
        threads = {t: open(f"/proc/{pid}/task/{t}/wchan").read() for t in os.listdir(f"/proc/{pid}/task")}
        return f"{status}; threads waiting in {threads}"
    except OSError:
        return "gone"


def test_iterate_lists_again_under_a_time_stamp_until_interrupted(queued):
    server, fill, *_ = queued
    proc = subprocess.Popen([console_script("vipu"), "queue", "-i", "1", "-o", "%i %t"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=server.env(), preexec_fn=as_from_a_terminal)
    seen, deadline = [], time.monotonic() + 30
    try:
        while seen.count("JOBID ST") < 2 and time.monotonic() < deadline:  # two listings
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            if ready:
                seen.append(proc.stdout.readline().rstrip("\n"))
    finally:
        code = interrupted(proc)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0 and err == ""
    stamps = [n for n, line in enumerate(seen) if CTIME.fullmatch(line)]
    assert len(stamps) == 2 and seen[stamps[0] + 1:stamps[0] + 3] == ["JOBID ST", f"{fill} R"]
    assert seen[stamps[1] - 1] == "" and seen[stamps[1] + 1] == "JOBID ST"  # a blank line between listings
