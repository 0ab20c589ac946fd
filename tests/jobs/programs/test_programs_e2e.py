"""Users' programs as jobs, end to end against a real controller (--ray off): a batch script runs as a real process
with Slurm's and the partition's environment, its output goes to its files, its exit code and signal are kept, a
cancel or a time limit stops its whole process group (SIGKILL after KillWait), and a controller killed under it
leaves nothing running."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from vipu.jobs.output_folder import WRITER, writer_mark
from vipu.partition.node_names import expand

from tests.cli_forks import run_script
from tests.cli.test_cli_e2e import run
from tests.conftest import console_script
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}


def spec_file(tmp_path: Path, script: str, name: str = "prog", environment: dict | None = None, **fields) -> str:
    """A job spec running `script` from tmp_path, as `vipu submit job.sh` sends one."""
    spec = {"name": name, "ipus": 4, "time_limit": "2m", **fields,
            "workload": {"kind": "command", "script": script, "submit_dir": str(tmp_path),
                         "environment": {"PATH": os.environ["PATH"], "FROM_SUBMITTER": "yes", **(environment or {})}}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return str(path)


def ended(server, job: int, timeout: float = 30.0) -> dict:
    return wait_for(lambda: (d := show(server, job))["state"] in DONE and d, timeout=timeout)


def alive(pid: int) -> bool:
    """Running: not gone, and not a zombie its parent has yet to reap."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):  # gone, or gone between the open and the read
        return False


@pytest.fixture
def controller(server_factory):
    return server_factory(extra=["--kill-wait", "1"])


def test_a_script_runs_with_slurms_and_the_partitions_environment(controller, tmp_path):
    script = ("#!/bin/bash\necho job=$SLURM_JOB_ID name=$SLURM_JOB_NAME partition=$IPUOF_VIPU_API_PARTITION_ID"
              " ipus=$VIPU_PARTITION_IPUS\necho submit=$SLURM_SUBMIT_DIR pwd=$(pwd) from=$FROM_SUBMITTER\n"
              "echo options=$POPLAR_TARGET_OPTIONS\necho oops >&2\n"
              "echo $SLURM_NODELIST $SLURM_JOB_NODELIST $SLURM_JOB_START_TIME $SLURM_JOB_END_TIME\n"
              "echo task=$SLURM_PROCID,$SLURM_LOCALID,$SLURM_NODEID on=$SLURMD_NODENAME\n"
              "echo ids=$SLURM_JOB_UID,$SLURM_JOB_GID pid=$(( SLURM_TASK_PID == $$ ))\n")
    [job] = submit(controller, spec_file(tmp_path, script))
    detail = ended(controller, job)
    assert (detail["state"], detail["exit_code"], detail["signal"]) == ("COMPLETED", 0, 0)
    out = (tmp_path / f"slurm-{job}.out").read_text().splitlines()  # sbatch's default name, in the workdir
    assert out[0] == f"job={job} name=prog partition=slurm_{job} ipus=4"
    assert out[1] == f"submit={tmp_path} pwd={tmp_path} from=yes"
    assert json.loads(out[2].removeprefix("options="))["ipuLinkDomainSize"] == "4"
    assert out[3] == "oops"  # stderr with stdout unless --error says otherwise
    nodes, job_nodes, start, end = out[4].split()
    assert nodes == job_nodes != "" and int(start) == int(detail["start_time"])
    assert int(end) - int(start) == 120  # its time limit (2m), in Unix seconds as SLURM_JOB_END_TIME
    assert out[5] == f"task=0,0,0 on={expand(nodes)[0]}"  # task 0 on its first node, as slurmd says (walk44)
    assert out[6] == f"ids={os.getuid()},{os.getgid()} pid=1"  # who it runs as; SLURM_TASK_PID the script's pid
    logs = run(controller, "vipu", "logs", str(job))
    assert logs.returncode == 0 and logs.stdout.splitlines() == out


def test_a_yaml_spec_of_a_command_runs_where_vipu_submit_ran(controller, tmp_path):
    """submit_dir left out: vipu submit fills in its own directory, as sbatch's SLURM_SUBMIT_DIR."""
    (tmp_path / "cmd.yaml").write_text("name: cmd\nipus: 1\ntime_limit: 1m\nworkload:\n  kind: command\n"
                                       "  script: |\n    #!/bin/sh\n    echo ran in $(pwd) from $SLURM_SUBMIT_DIR\n")
    out = subprocess.run([console_script("vipu"), "submit", "cmd.yaml", "--parsable"], cwd=tmp_path,
                         env=controller.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    job = int(out.stdout)
    assert ended(controller, job)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == f"ran in {tmp_path} from {tmp_path}\n"


def test_exit_codes_and_signals_are_kept_as_code_colon_signal(controller, tmp_path):
    [fails] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nexit 3\n", "fails"))
    [crashes] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nkill -SEGV $$\n", "crashes"))
    [missing] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nno-such-program-here\n", "missing"))
    assert [(d["state"], d["exit_code"], d["signal"]) for d in map(lambda j: ended(controller, j),
            (fails, crashes, missing))] == [("FAILED", 3, 0), ("FAILED", 0, 11), ("FAILED", 127, 0)]
    history = run(controller, "vipu", "history", "--json")
    codes = {x["id"]: (x["exit_code"], x["signal"]) for x in json.loads(history.stdout)}
    assert codes[crashes] == (0, 11)
    # Slurm's FAIL_SIGNAL: Reason=RaisedSignal:11(Segmentation fault), in scontrol's words (spaces as _); sacct's
    # Reason the name alone
    assert "Reason=RaisedSignal:11(Segmentation_fault)" in run(controller, "vipu", "show", "job", str(crashes)).stdout
    assert "Reason=NonZeroExitCode" in run(controller, "vipu", "show", "job", str(fails)).stdout
    listed = run(controller, "vipu", "history", "-j", str(crashes), "-o", "JobID,Reason,ExitCode", "-n", "-P").stdout
    assert listed == f"{crashes}|RaisedSignal|0:11\n"


def test_error_goes_to_its_own_file_and_a_missing_directory_fails_the_job_saying_why(controller, tmp_path):
    script = "#!/bin/sh\necho out\necho err >&2\n"
    [job] = submit(controller, spec_file(tmp_path, script, "split", output=str(tmp_path / "o-%j.txt"),
                                         error=str(tmp_path / "e-%x.txt")))
    assert ended(controller, job)["state"] == "COMPLETED"
    assert (tmp_path / f"o-{job}.txt").read_text() == "out\n" and (tmp_path / "e-split.txt").read_text() == "err\n"
    # a folder the submit knows is missing: refused then, naming the field and the fix
    lost = run(controller, "vipu", "submit", spec_file(tmp_path, script, "lost", output=str(tmp_path / "no" / "such"
                                                                                            / "out")))
    assert lost.returncode == 2 and lost.stderr == (
        f"vipu: error: output file {tmp_path / 'no' / 'such' / 'out'}: its directory {tmp_path / 'no' / 'such'} does"
        " not exist; create it, or give a path in an existing directory (as sbatch, vipu never makes it)\n")
    spec = json.loads(Path(spec_file(tmp_path, script, "nowhere")).read_text())
    spec["workload"]["chdir"] = str(tmp_path / "gone")
    (tmp_path / "nowhere.json").write_text(json.dumps(spec))
    nowhere = run(controller, "vipu", "submit", str(tmp_path / "nowhere.json"))
    # the cause is named, not the missing folder of its output file there (walk28)
    assert nowhere.returncode == 2 and nowhere.stderr == (
        f"vipu: error: workload.chdir {tmp_path / 'gone'} does not exist; create it, or give a working directory"
        " that exists\n")
    # gone between the submit and the start: the start fails the job saying why, and a release keeps it held
    (tmp_path / "no" / "such").mkdir(parents=True)
    (tmp_path / "gone").mkdir()
    [first] = submit(controller, spec_file(tmp_path, script, "first", hold=True))
    [lost] = submit(controller, spec_file(tmp_path, script, "lost", output=str(tmp_path / "no" / "such" / "out"),
                                          dependency=f"afterany:{first}"))
    (tmp_path / "nowhere.json").write_text(json.dumps({**spec, "hold": True}))
    [held] = submit(controller, str(tmp_path / "nowhere.json"))
    shutil.rmtree(tmp_path / "no")
    (tmp_path / "gone").rmdir()
    assert run(controller, "vipu", "cancel", str(first)).returncode == 0
    detail = ended(controller, lost)
    assert detail["state"] == "FAILED" and detail["exit_code"] == 1
    why = f"its directory {tmp_path / 'no' / 'such'} does not exist"
    assert why in detail["training"]["failure"]
    assert why in run(controller, "vipu", "logs", str(lost)).stdout
    assert not (tmp_path / "no").exists()  # as sbatch: the job fails rather than the directory being made
    refused = run(controller, "vipu", "release", str(held))
    assert refused.returncode == 4 and f"job {held} stays held: the working directory {tmp_path / 'gone'}" in (
        refused.stderr)


def test_cancel_stops_the_whole_process_group_and_sigkill_follows_kill_wait(controller, tmp_path):
    script = ("#!/bin/bash\ntrap '' TERM\nsleep 300 & echo $! > child\necho $$ > pid\nwait\n")  # deaf to SIGTERM
    [job] = submit(controller, spec_file(tmp_path, script, "deaf"))
    pids = wait_for(lambda: (tmp_path / "child").is_file() and (tmp_path / "pid").is_file() and [
        int((tmp_path / f).read_text()) for f in ("pid", "child") if (tmp_path / f).read_text().strip()])
    assert len(pids) == 2 and all(map(alive, pids))
    assert run(controller, "vipu", "cancel", str(job)).returncode == 0
    wait_for(lambda: not any(map(alive, pids)), timeout=10)  # SIGTERM ignored: SIGKILL a second later
    wait_for(lambda: show(controller, job)["state"] == "CANCELLED")  # COMPLETING until then
    # sacct's ExitCode is what ended the program: SIGKILL (it had trapped SIGTERM), not the SIGTERM it was sent
    # first (slurmctld takes the batch script's status for a job it has ended already)
    assert wait_for(lambda: (d := show(controller, job))["signal"] == 9 and d)["exit_code"] == 0
    said = (tmp_path / f"slurm-{job}.out").read_text().splitlines()  # walk40: slurmstepd's line, once
    assert len(said) == 1 and re.fullmatch(rf"slurmstepd-(ag\d\d): error: \*\*\* JOB {job} ON \1 CANCELLED AT"
                                           r" \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d \*\*\*", said[0]), said


def test_a_stopped_programs_ipus_go_to_no_other_job_until_it_has_ended(server_factory, tmp_path):
    """As Slurm keeps a job's nodes COMPLETING: a cancelled program deaf to SIGTERM keeps its partition through
    KillWait, so a job wanting the whole Pod starts only once it is gone, and a smaller job behind it that would
    delay it waits too (backfill counts on the IPUs freeing by the end of KillWait). Meanwhile the job shows CG."""
    server = server_factory(extra=["--kill-wait", "10"])  # long enough for the CLI calls on a loaded machine
    script = "#!/bin/bash\ntrap '' TERM\necho $$ > pid\nwhile true; do sleep 0.1; done\n"
    [job] = submit(server, spec_file(tmp_path, script, "deaf"))
    pid = wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text().strip()
                   and int((tmp_path / "pid").read_text()))
    assert run(server, "vipu", "cancel", str(job)).returncode == 0
    [whole] = submit(server, "--ipus", "64", "--duration", "1s", "--name", "whole")
    [small] = submit(server, "--ipus", "4", "--time-limit", "10m", "--duration", "1s", "--name", "small")
    assert show(server, job)["state"] == "COMPLETING" and alive(pid)
    assert list(jobs(server, "-t", "CG")) == [job]
    # its machine as sinfo shows a node whose job is completing: comp, counted allocated, named under `vipu info`
    [(machine, counts)] = [line.split("|")[1:] for line in run(server, "vipu", "info", "-h", "-o", "%t|%N|%F").stdout
                           .splitlines() if line.startswith("comp|")]
    assert counts == "1/0/0/1"
    assert f", 1 completing (comp: {machine}), 2 pending" in run(server, "vipu", "info").stdout
    again = run(server, "vipu", "cancel", str(job))
    assert again.returncode != 0 and f"job {job} is already COMPLETING: it ended CANCELLED" in again.stderr
    partitions = json.loads(run(server, "vipu", "list", "partitions", "--json").stdout)
    assert [x["name"] for x in partitions] == [f"slurm_{job}"]  # kept while its program runs
    assert (show(server, whole)["state"], show(server, small)["state"], alive(pid)) == ("PENDING", "PENDING", True)
    assert ended(server, whole)["state"] == "COMPLETED"
    assert not alive(pid)  # it started only after the program was killed
    started = show(server, whole)["start_time"]
    assert started >= show(server, job)["end_time"] + 9  # KillWait (10 s) after the cancel, within a second
    assert ended(server, small)["start_time"] >= show(server, whole)["end_time"]
    assert show(server, job)["state"] == "CANCELLED"


def test_requeue_of_a_running_program_reruns_it_once_its_old_run_is_gone(controller, tmp_path):
    """scontrol requeue: the old run is torn down (its program deaf to SIGTERM lives through KillWait and keeps
    slurm_N), then the job runs again: one REQUEUED run, no NODE_FAIL from a partition that still existed."""
    script = "#!/bin/bash\ntrap '' TERM\necho $$ >> pids\nwhile true; do sleep 0.1; done\n"
    [job] = submit(controller, spec_file(tmp_path, script, "again"))
    pids = tmp_path / "pids"
    first = wait_for(lambda: pids.is_file() and pids.read_text().strip() and int(pids.read_text()))
    assert run(controller, "vipu", "requeue", str(job)).returncode == 0
    second = wait_for(lambda: len(lines := pids.read_text().split()) == 2 and int(lines[1]), timeout=30)
    assert not alive(first)  # started only after the first run's program was killed
    detail = show(controller, job)
    assert (detail["state"], detail["requeue_count"]) == ("RUNNING", 1)
    assert [h["state"] for h in detail["detail"]["history"]] == ["PENDING", "RUNNING", "REQUEUED", "PENDING",
                                                                 "RUNNING"]
    assert run(controller, "vipu", "cancel", str(job)).returncode == 0
    wait_for(lambda: not alive(second), timeout=10)
    [kept] = submit(controller, spec_file(tmp_path, script, "kept", requeue=False))
    wait_for(lambda: show(controller, kept)["state"] == "RUNNING")
    refused = run(controller, "vipu", "requeue", str(kept))
    assert refused.returncode == 4 and refused.stderr.count("\n") == 1
    assert f"job {kept} was submitted with --no-requeue" in refused.stderr
    assert show(controller, kept)["state"] == "RUNNING"


def test_a_requeued_or_node_failed_runs_error_file_ends_with_slurmstepds_line_for_it(controller, tmp_path):
    """scontrol requeuehold of a running batch job, and a failure of an IPU under one: slurmstepd's SIG_REQUEUED and
    SIG_NODE_FAIL lines (held, or not requeued, so no next run truncates the file)."""
    script = "#!/bin/sh\necho $$ > pid-$SLURM_JOB_ID\nexec sleep 300\n"
    for stop, words, fields in (("requeue", "DUE TO JOB REQUEUE", {}),
                                ("fail", "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS", {"requeue": False})):
        [job] = submit(controller, spec_file(tmp_path, script, stop, **fields))
        pids = tmp_path / f"pid-{job}"
        pid = wait_for(lambda: pids.is_file() and pids.read_text().strip() and int(pids.read_text()))
        if stop == "requeue":
            assert run(controller, "vipu", "requeue", "--hold", str(job)).returncode == 0
        else:
            first = show(controller, job)["detail"]["first_ipu"]
            assert run(controller, "vipu-admin", "fail", "ipus", str(first)).returncode == 0
            assert ended(controller, job)["state"] == "NODE_FAIL"
        wait_for(lambda: not alive(pid), timeout=10)
        said = (tmp_path / f"slurm-{job}.out").read_text().splitlines()
        assert len(said) == 1 and re.fullmatch(rf"slurmstepd-(ag\d\d): error: \*\*\* JOB {job} ON \1 CANCELLED AT"
                                               rf" \S+ {words} \*\*\*", said[0]), said


def test_history_d_keeps_each_runs_exit_code_and_nodes_through_a_kill_9(controller, tmp_path):
    """hist35: `vipu history -D` of a program requeued while deaf to SIGTERM shows how that run ended, the SIGKILL
    KillWait later (0:9, told once the job was back in the queue), and where it ran, then the next run's own code;
    the store keeps both through a kill -9 of the controller."""
    script = "#!/bin/bash\nif [ -e ran ]; then exit 4; fi\ntouch ran\ntrap '' TERM\necho $$ > pid\n" \
             "while true; do sleep 0.1; done\n"
    [job] = submit(controller, spec_file(tmp_path, script, "twice"))
    wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text().strip())
    assert run(controller, "vipu", "requeue", str(job)).returncode == 0
    assert (ended(controller, job)["state"], show(controller, job)["exit_code"]) == ("FAILED", 4)
    for restart in (False, True):  # and after a kill -9: written in the store
        if restart:
            controller.kill(signal.SIGKILL)
            controller.start()
        out = run(controller, "vipu", "history", "-D", "-j", str(job), "-n", "-P", "-o", "State,ExitCode,NodeList")
        requeued, failed = out.stdout.split()
        assert requeued.rsplit("|", 1)[0] == "REQUEUED|0:9" and failed.rsplit("|", 1)[0] == "FAILED|4:0", out
        assert requeued.rsplit("|", 1)[1] == failed.rsplit("|", 1)[1] != "None assigned"  # its IPUs were kept
        rows = json.loads(run(controller, "vipu", "history", "-D", "-j", str(job), "--json").stdout)
        assert [(r["state"], r["exit_code"], r["signal"]) for r in rows] == [("REQUEUED", 0, 9), ("FAILED", 4, 0)]


def test_a_preemptor_starts_on_its_victims_ipus_once_the_victims_program_is_gone(controller, tmp_path):
    """Slurm keeps the preemptor pending while the preempted job's nodes are cleaned up: the victim's program, deaf
    to SIGTERM, keeps its partition through KillWait, and the high job starts after it on those IPUs, once (no
    NODE_FAIL from a partition that still existed)."""
    script = "#!/bin/bash\ntrap '' TERM\necho $$ > pid\nwhile true; do sleep 0.1; done\n"
    [low] = submit(controller, spec_file(tmp_path, script, "low", ipus=64, qos="low", requeue=False))
    pid = wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text().strip()
                   and int((tmp_path / "pid").read_text()))
    [high] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho hi\n", "high", ipus=64, qos="high"))
    detail = ended(controller, high)
    assert (detail["state"], detail["exit_code"]) == ("COMPLETED", 0)
    assert [h["state"] for h in detail["detail"]["history"]] == ["PENDING", "RUNNING", "COMPLETED"]
    assert not alive(pid) and show(controller, low)["state"] == "PREEMPTED"
    assert detail["start_time"] >= show(controller, low)["end_time"] + 0.9  # after KillWait (1 s)
    assert (tmp_path / f"slurm-{high}.out").read_text() == "hi\n"


def test_an_old_default_output_file_keeps_the_new_job_held_instead_of_failing_it(controller, tmp_path):
    """walk22c: a new state in a folder with an old slurm-1.out failed job 1 at its start (the controller writes over
    no file it did not write). vipu submit, which knows the folder, holds that job and says why; others run."""
    (tmp_path / "slurm-1.out").write_text("old\n")

    def wrap(*args: str) -> subprocess.CompletedProcess:
        return run_script(console_script("vipu"), ["submit", "--ipus", "1", *args], env=controller.env(), cwd=tmp_path)

    first = wrap("--wrap", "echo hi", "--parsable")
    assert (first.returncode, first.stdout) == (0, "1\n"), first.stderr
    assert first.stderr == (f"vipu: job 1 is held: {tmp_path}/slurm-1.out exists, and the controller writes over no"
                            " output file it did not write for this job or your earlier ones; remove or rename that"
                            " file, then `vipu release 1` (or submit with -o/--output)\n")
    assert (show(controller, 1)["state"], show(controller, 1)["held"]) == ("PENDING", True)
    assert not show(controller, 1)["spec"]["hold"]  # the CLI's hold, not its user's: a resubmit is not held
    refused = run(controller, "vipu", "release", "1")  # released, it could only fail (walk22d defect 9)
    assert refused.returncode == 4 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"job 1 stays held: output file {tmp_path}/slurm-1.out exists" in refused.stderr
    second = wrap("--wrap", "echo hi")  # its own file is free: released at once, no line
    assert (second.returncode, second.stderr) == (0, ""), second.stderr
    assert ended(controller, 2)["state"] == "COMPLETED" and (tmp_path / "slurm-2.out").read_text() == "hi\n"
    assert (tmp_path / "slurm-1.out").read_text() == "old\n" and show(controller, 1)["state"] == "PENDING"
    (tmp_path / "slurm-1.out").unlink()
    assert run(controller, "vipu", "release", "1").returncode == 0
    assert ended(controller, 1)["state"] == "COMPLETED" and (tmp_path / "slurm-1.out").read_text() == "hi\n"
    # walk29: a file this controller made for an earlier job of the same user (its writer mark, as an earlier state
    # in the same folder leaves it) is written over as sbatch's rerun writes over its own: no hold, no line
    tagged = tmp_path / "slurm-3.out"
    tagged.write_text("an earlier state's job 3\n")
    os.setxattr(tagged, WRITER, writer_mark(controller.state_dir, show(controller, 2)["user"]).encode())
    third = wrap("--wrap", "echo again")
    assert (third.returncode, third.stderr) == (0, ""), third.stderr
    assert ended(controller, 3)["state"] == "COMPLETED" and tagged.read_text() == "again\n"


def test_a_time_limit_ends_the_run_timeout(controller, tmp_path):
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho $$ > pid\nexec sleep 300\n", "slow",
                                         time_limit="2s"))
    detail = ended(controller, job)
    assert (detail["state"], detail["signal"]) == ("TIMEOUT", 15)
    wait_for(lambda: not alive(int((tmp_path / "pid").read_text())), timeout=10)
    said = (tmp_path / f"slurm-{job}.out").read_text().splitlines()  # walk40: as Slurm 22.05's slurmstepd says it
    assert len(said) == 1 and re.fullmatch(rf"slurmstepd-(ag\d\d): error: \*\*\* JOB {job} ON \1 CANCELLED AT"
                                           r" \S+ DUE TO TIME LIMIT \*\*\*", said[0]), said


def test_logs_show_a_running_programs_output_as_it_comes(controller, tmp_path):
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho first\nwhile [ ! -e go ]; do sleep 0.1; done\n"
                                                   "echo second\n", "live"))
    wait_for(lambda: run(controller, "vipu", "logs", str(job)).stdout == "first\n")
    (tmp_path / "go").touch()
    assert ended(controller, job)["state"] == "COMPLETED"
    assert run(controller, "vipu", "logs", str(job)).stdout == "first\nsecond\n"
    # requeued: the earlier run's end above the current run's output, as for a training job (walk35)
    assert run(controller, "vipu", "requeue", str(job)).returncode == 0
    wait_for(lambda: show(controller, job)["requeue_count"] == 1 and show(controller, job)["state"] == "COMPLETED")
    first, *rest = run(controller, "vipu", "logs", str(job)).stdout.splitlines()
    assert first.startswith("run 1 ended COMPLETED at ") and rest == ["first", "second"], (first, rest)
    followed = run(controller, "vipu", "logs", "-f", str(job)).stdout.splitlines()
    assert followed[:3] == [first, "first", "second"], followed


def test_a_killed_controller_leaves_no_program_running_and_its_restart_requeues_the_job(controller, tmp_path):
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho $$ > pid\nexec sleep 300\n", "orphan"))
    pid = wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text().strip()
                   and int((tmp_path / "pid").read_text()))
    controller.kill(signal.SIGKILL)
    wait_for(lambda: not alive(pid), timeout=30)  # its supervisor saw the controller go, and stopped it
    controller.restart()
    detail = show(controller, job)
    assert detail["requeue_count"] == 1 and "NODE_FAIL" in [h["state"] for h in detail["detail"]["history"]]
    assert "ended NODE_FAIL at the controller's restart, requeued" in detail["detail"]["recovery"]


def test_logs_say_where_stderr_went_when_it_has_a_file_of_its_own(controller, tmp_path):
    """Regression (walk31): with -o and -e apart, `vipu logs` showed stdout only and never named the error file."""
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho out\necho err >&2\n", "apart",
                                         output=str(tmp_path / "o.txt"), error=str(tmp_path / "e.txt")))
    assert ended(controller, job)["state"] == "COMPLETED"
    assert run(controller, "vipu", "logs", str(job)).stdout == (
        f"out\n(its stderr goes to {tmp_path / 'e.txt'}, not shown here)\n")


def test_a_script_without_an_interpreter_line_is_refused_naming_the_field(controller, tmp_path):
    out = run(controller, "vipu", "submit", spec_file(tmp_path, "echo hi\n", "bare"))
    assert out.returncode == 2
    assert "workload.script: does not start with #! and an interpreter" in out.stderr
    out = run(controller, "vipu", "submit", spec_file(tmp_path, "#!/bin/sh\r\necho hi\r\n", "dos"))
    assert out.returncode == 2 and "has DOS line breaks" in out.stderr and "dos2unix" in out.stderr


def test_a_missing_interpreter_fails_the_job_naming_its_first_line(controller, tmp_path):
    [job] = submit(controller, spec_file(tmp_path, "#!/usr/bin/nosuchinterp -x\necho hi\n", "nointerp"))
    detail = ended(controller, job)
    assert detail["state"] == "FAILED"
    logs = run(controller, "vipu", "logs", str(job)).stdout
    assert ("its interpreter /usr/bin/nosuchinterp (the script's first line, #!/usr/bin/nosuchinterp -x) does not"
            " exist on") in logs and "fix that line, e.g. #!/bin/bash" in logs


@pytest.mark.skipif(os.geteuid() != 0, reason="running a program as another account needs a root controller")
def test_under_secure_a_program_runs_as_its_users_unix_account_and_only_then(server_factory, tmp_path):
    server = server_factory(extra=["--secure"])
    admin = (server.state_dir / "admin.key").read_text().strip()

    def as_(key: str) -> dict:
        return {**server.env(), "VIPU_CLI_API_ACCESS_KEY": key}

    def user(name: str, *flags: str) -> str:
        out = run(server, "vipu-admin", "create", "user", name, *flags, "--json", env=as_(admin))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["access_key"]

    refused = run(server, "vipu-admin", "create", "user", "eve", "--unix-user", "root", env=as_(admin))
    assert refused.returncode == 2 and "unix_user root is root" in refused.stderr
    alice, bob = user("alice", "--unix-user", "nobody"), user("bob")
    home = Path(tempfile.mkdtemp(prefix="vipu-nobody-"))  # pytest's own folders are root's alone
    home.chmod(0o777)  # nobody's to work in, as a user's own directory is theirs
    script = ("#!/bin/sh\nid -u\nid -g\nif touch /root/.vipu-escalation 2>/dev/null; then echo escalated; fi\n"
              "ulimit -n\nulimit -p\n")  # the submitter's soft limits, set as the user (dash's -p: processes)
    limits = {"SLURM_RLIMIT_NOFILE": "50", "SLURM_RLIMIT_NPROC": "U4000"}
    [job] = [int(i) for i in json.loads(run(server, "vipu", "submit", spec_file(home, script, "mine", limits),
                                            "--json", env=as_(alice)).stdout)["job_ids"]]
    detail = wait_for(lambda: (d := json.loads(run(server, "vipu", "show", "job", str(job), "--json",
                                                   env=as_(alice)).stdout))["state"] in DONE and d)
    assert detail["state"] == "COMPLETED", detail["training"]
    out = home / f"slurm-{job}.out"
    assert out.read_text().split() == ["65534", "65534", "50", "4000"]  # nobody's uid and gid, no root file written
    assert out.stat().st_uid == 65534  # opened as the user, not by the controller
    # the user swaps its folder for a symlink to one only root may enter: `vipu logs` reads as the user, so it shows
    # nothing of root's file (it did: the controller read the path as root)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / out.name).write_text("TOPSECRET\n")
    shutil.rmtree(home)
    home.symlink_to(private)
    logs = run(server, "vipu", "logs", str(job), env=as_(alice))
    assert logs.returncode == 0 and "TOPSECRET" not in logs.stdout and "permission denied" in logs.stdout, logs
    followed = run(server, "vipu", "logs", "-f", str(job), env=as_(alice))  # -f reads as the user too
    assert followed.returncode == 0 and "TOPSECRET" not in followed.stdout, followed
    assert "permission denied" in followed.stdout and f"job {job} ended COMPLETED" in followed.stderr
    theirs = run(server, "vipu", "logs", "-f", str(job), env=as_(bob))  # not the owner: refused, as vipu logs is
    assert theirs.returncode == 6 and theirs.stdout == "", theirs
    home.unlink()
    denied = run(server, "vipu", "submit", spec_file(tmp_path, script, "theirs"), env=as_(bob))
    assert denied.returncode == 6 and "user bob has no Unix account to run programs as" in denied.stderr
    assert "vipu-admin update user bob --unix-user ACCOUNT" in denied.stderr
    assert run(server, "vipu-admin", "update", "user", "bob", "--unix-user", "nobody", env=as_(bob)).returncode == 6
    mapped = run(server, "vipu-admin", "update", "user", "bob", "--unix-user", "nobody", "--json", env=as_(admin))
    assert json.loads(mapped.stdout)["unix_user"] == "nobody"
    assert run(server, "vipu", "submit", spec_file(tmp_path, script, "now"), env=as_(bob)).returncode == 0
