"""poprun inside a job: its arithmetic against the job's partition, each instance's POPDIST_* variables, and a run
of it in a real job."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for
from tests.conftest import console_script
from tests.jobs.programs.test_programs_e2e import ended
from vipu.jobs.programs import launcher
from vipu.jobs.programs.launcher import LayoutError, instance_environment, layout, parse

JOB = {"IPUOF_VIPU_API_PARTITION_ID": "slurm_7", "VIPU_PARTITION_IPUS": "16"}


@pytest.mark.parametrize("flags, want", [
    ([], (1, 16, 1)),
    (["--ipus-per-replica", "4"], (1, 4, 4)),
    (["--num-instances", "4", "--num-replicas", "8", "--ipus-per-replica", "2"], (4, 8, 2)),
])
def test_a_layout_that_fills_the_partition(flags, want):
    assert layout(parse([*flags, "prog"]), JOB)[2:5] == want


@pytest.mark.parametrize("flags, env, says", [
    (["--num-replicas", "4"], JOB, "--num-replicas 4 x --ipus-per-replica 1 = 4 IPUs, but partition slurm_7 has 16"),
    (["--num-replicas", "32"], JOB, "= 32 IPUs, but partition slurm_7 has 16"),
    (["--ipus-per-replica", "3"], {**JOB, "VIPU_PARTITION_IPUS": "4"},  # a suggestion that adds up
     "give replicas x IPUs per replica = 4 (e.g. --num-replicas 2 --ipus-per-replica 2)"),
    (["--num-instances", "3"], JOB, "--num-instances 3 does not divide the 16 replicas"),
    (["--ipus-per-replica", "0"], JOB, "--ipus-per-replica is 0; give 1 or more"),
    (["--only-output-from-instance", "2", "--num-instances", "2"], JOB,
     "instances are 0 to 1 (--num-instances 2); give one of them"),
    (["--num-replicas", "-1"], JOB, "--num-replicas is -1; give 1 or more"),  # not "-1 x 1 = -1 IPUs"
    (["--num-instances", "0"], JOB, "--num-instances is 0; give 1 or more"),
    (["--vipu-partition", "other"], JOB, "this job holds partition slurm_7"),
    ([], {}, "poprun runs inside a job"),
])
def test_a_layout_that_does_not_add_up_is_refused_with_the_arithmetic(flags, env, says):
    with pytest.raises(LayoutError, match=says.replace("(", r"\(").replace(")", r"\)")):
        layout(parse([*flags, "prog"]), env)


def test_each_instance_runs_its_share_of_the_replicas():
    envs = [instance_environment(JOB, i, 4, 8, 2) for i in range(4)]
    assert [(e["POPDIST_REPLICA_INDEX_OFFSET"], e["POPDIST_LOCAL_INSTANCE_INDEX"]) for e in envs] == [
        ("0", "0"), ("2", "1"), ("4", "2"), ("6", "3")]
    assert {(e["POPDIST_NUM_LOCAL_REPLICAS"], e["POPDIST_NUM_TOTAL_REPLICAS"], e["POPDIST_NUM_IPUS_PER_REPLICA"],
             e["POPDIST_NUM_INSTANCES"], e["IPUOF_VIPU_API_PARTITION_ID"]) for e in envs} == {
        ("2", "8", "2", "4", "slurm_7")}
    # srun's task variables: an instance is a task
    assert [(e["SLURM_NTASKS"], e["SLURM_NPROCS"], e["SLURM_PROCID"], e["SLURM_LOCALID"]) for e in envs] == [
        ("4", "4", str(i), str(i)) for i in range(4)]


def test_one_instance_failing_stops_the_others_and_all_they_started(tmp_path, monkeypatch):
    """As mpirun: the first failure is poprun's exit code; the other instances get SIGTERM, SIGKILL if deaf to it,
    and nothing they started is left running."""
    monkeypatch.setattr(launcher, "KILL_WAIT_S", 0.5)
    script = (f"cd {tmp_path}; i=$POPDIST_INSTANCE_INDEX;"
              " if [ $i = 2 ]; then while [ ! -s child0 ] || [ ! -s child1 ]; do sleep 0.05; done; exit 7; fi;"
              " if [ $i = 1 ]; then trap '' TERM; fi; sleep 60 & echo $! > child$i; wait")
    envs = [instance_environment({**os.environ, **JOB}, i, 3, 3, 1) for i in range(3)]
    before = signal.getsignal(signal.SIGTERM)
    started = time.monotonic()
    try:
        code = launcher.launch(["sh", "-c", script], envs, None)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert code == 7 and time.monotonic() - started < 30
    for i in (0, 1):  # the sleeps they left are gone too (or dead, not yet reaped by init): a SIGKILLed one may
        pid = int((tmp_path / f"child{i}").read_text())  # still show R for a moment on a busy machine
        wait_for(lambda: _state(pid) in (None, "Z", "X"), timeout=5)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_poprun_in_a_job_starts_its_instances_and_refuses_a_layout_larger_than_the_partition(server, tmp_path):
    poprun = console_script("poprun")
    # with the V-IPU flags a Graphcore script passes (the job's own: checked, and taken)
    command = (f"echo submitted from $SLURM_SUBMIT_HOST; {poprun} --vipu-partition=slurm_${{SLURM_JOBID}}"
               " --vipu-server-host=$IPUOF_VIPU_API_HOST --vipu-server-port=$IPUOF_VIPU_API_PORT --num-ilds 1"
               " --reset-partition=no --num-instances 2 --num-replicas 4 --print-topology=yes sh -c"
               " 'echo $POPDIST_INSTANCE_INDEX:$POPDIST_REPLICA_INDEX_OFFSET:$POPDIST_NUM_LOCAL_REPLICAS'")
    out = run(server, "vipu", "submit", "--ipus", "4", "-t", "1", "-D", str(tmp_path), "--wrap", command, "--json")
    [job] = json.loads(out.stdout)["job_ids"]
    assert ended(server, job)["state"] == "COMPLETED"
    host, *lines = (tmp_path / f"slurm-{job}.out").read_text().splitlines()
    assert lines.pop(0).startswith("poprun: warning: --reset-partition=no has no effect here")
    assert host == f"submitted from {socket.gethostname()}"  # as sbatch sets it where it runs
    assert lines[:3] == [f"poprun topology: partition slurm_{job}, 2 instance(s), 4 replica(s) of 1 IPU(s)",
                         "  instance 0: replicas 0-1 on IPUs 0-1", "  instance 1: replicas 2-3 on IPUs 2-3"]
    assert sorted(lines[3:]) == ["[0] 0:0:2", "[1] 1:2:2"]
    out = run(server, "vipu", "submit", "--ipus", "4", "-t", "1", "-D", str(tmp_path), "--wrap",
              f"{poprun} --num-replicas 8 true", "--json")
    [bad] = json.loads(out.stdout)["job_ids"]
    detail = ended(server, bad)
    assert (detail["state"], detail["exit_code"]) == ("FAILED", 2)
    assert "--num-replicas 8 x --ipus-per-replica 1 = 8 IPUs, but partition" in (
        tmp_path / f"slurm-{bad}.out").read_text()


INSTANCE = """import os, signal, sys, time
i = os.environ["POPDIST_INSTANCE_INDEX"]
def heard(sig, _):
    with open(f"got{i}", "a") as f:
        f.write(signal.Signals(sig).name + "\\n")
    if sig == signal.SIGUSR2:
        sys.exit(0)
signal.signal(signal.SIGUSR1, heard)
signal.signal(signal.SIGUSR2, heard)
open(f"ready{i}", "w").close()
while not os.path.exists("stop"):
    time.sleep(0.02)
"""


def test_poprun_passes_on_a_users_signal_to_every_instance_and_not_its_supervisors(tmp_path):
    """As mpirun and srun pass on USR1 and USR2: a batch script's trap that signals poprun reaches every instance
    (it killed poprun, and the handlers never ran). What the job's supervisor sends poprun is not passed on: the
    supervisor signals the instances itself, and an instance would hear it twice."""
    (tmp_path / "usr.py").write_text(INSTANCE)
    env = {**os.environ, **JOB, "VIPU_SUPERVISOR_PID": str(os.getpid())}  # this test plays the supervisor
    with subprocess.Popen([sys.executable, "-m", "vipu.jobs.programs.launcher", "--num-instances", "2",
                           sys.executable, "usr.py"], cwd=tmp_path, env=env) as poprun:
        wait_for(lambda: all((tmp_path / f"ready{i}").exists() for i in (0, 1)))
        os.kill(poprun.pid, signal.SIGUSR1)  # the supervisor's: not passed on
        assert subprocess.run(["kill", "-USR2", str(poprun.pid)]).returncode == 0  # a user's: passed on
        assert poprun.wait(timeout=60) == 0
    assert [(tmp_path / f"got{i}").read_text() for i in (0, 1)] == ["SIGUSR2\n"] * 2


TERMED = """import os, signal, time
i = os.environ["POPDIST_INSTANCE_INDEX"]
def heard(sig, _):
    with open(f"got{i}", "a") as f:
        f.write(signal.Signals(sig).name + "\\n")
signal.signal(signal.SIGTERM, heard)
open(f"ready{i}", "w").write(str(os.getpid()))
while not os.path.exists("stop"):
    time.sleep(0.02)
"""


def pending(pid: int, sig: int) -> bool:
    """Whether `sig` waits in the process's shared pending set (blocked, not yet taken by sigtimedwait)."""
    line = next(x for x in open(f"/proc/{pid}/status") if x.startswith("ShdPnd:"))
    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)


def test_a_stop_the_supervisor_sent_reaches_each_instance_once(tmp_path):
    """Review: the supervisor signals every process of the job, the instances included, and poprun sent each
    instance SIGTERM again, so a handler that writes a checkpoint ran twice."""
    (tmp_path / "term.py").write_text(TERMED)
    env = {**os.environ, **JOB, "VIPU_SUPERVISOR_PID": str(os.getpid())}  # this test plays the supervisor
    with subprocess.Popen([sys.executable, "-m", "vipu.jobs.programs.launcher", "--num-instances", "2",
                           sys.executable, "term.py"], cwd=tmp_path, env=env) as poprun:
        wait_for(lambda: all((tmp_path / f"ready{i}").exists() and (tmp_path / f"ready{i}").read_text()
                             for i in (0, 1)))
        for i in (0, 1):  # as the supervisor does: each instance's group, then poprun
            os.killpg(int((tmp_path / f"ready{i}").read_text()), signal.SIGTERM)
        wait_for(lambda: all((tmp_path / f"got{i}").exists() for i in (0, 1)))
        os.kill(poprun.pid, signal.SIGTERM)
        wait_for(lambda: not pending(poprun.pid, signal.SIGTERM))  # poprun took it (and, before, sent it on)
        (tmp_path / "stop").touch()
        assert poprun.wait(timeout=60) == 0
    assert [(tmp_path / f"got{i}").read_text() for i in (0, 1)] == ["SIGTERM\n"] * 2


def test_vipu_cancel_s_usr1_reaches_each_instance_once_and_the_job_goes_on(server, tmp_path):
    """The newcomer's walk: `vipu cancel -s USR1` of a job running poprun ended it FAILED 138:0."""
    (tmp_path / "usr.py").write_text(INSTANCE)
    command = f"{console_script('poprun')} --num-instances 2 {sys.executable} usr.py"
    out = run(server, "vipu", "submit", "--ipus", "4", "-t", "1", "-D", str(tmp_path), "--wrap", command, "--json")
    [job] = json.loads(out.stdout)["job_ids"]
    wait_for(lambda: all((tmp_path / f"ready{i}").exists() for i in (0, 1)), timeout=60)
    assert run(server, "vipu", "cancel", "-s", "USR1", str(job)).returncode == 0
    wait_for(lambda: all((tmp_path / f"got{i}").exists() for i in (0, 1)))
    (tmp_path / "stop").touch()
    detail = ended(server, job)
    assert (detail["state"], detail["exit_code"], detail["signal"]) == ("COMPLETED", 0, 0)
    assert [(tmp_path / f"got{i}").read_text() for i in (0, 1)] == ["SIGUSR1\n"] * 2
