"""walk22d: a controller stopped (SIGTERM) or killed (-9) and started again on the same state requeues the runs it had,
but their programs go on ending through KillWait (a checkpoint written on SIGTERM). The restarted controller keeps
their IPUs, the job PENDING with reason Cleaning, until the old program's session is gone; the next run, or a
preemptor waiting for its victim, starts only then."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.jobs.programs.test_programs_e2e import spec_file

# each run appends to `log`; on SIGTERM it goes on until the test makes go<its restart count>, as a checkpoint would
CHECKPOINTS = ("#!/bin/bash\nn=$SLURM_RESTART_COUNT\necho start $n >> log\n"
               "trap 'echo TERM $n >> log; while [ ! -e go$n ]; do sleep 0.02; done; echo end $n >> log; exit 0' TERM\n"
               "while true; do sleep 0.02; done\n")


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def reasons(server) -> dict[str, str]:
    out = run(server, "vipu", "queue", "-h", "-o", "%i %T %r")
    assert out.returncode == 0, out.stderr
    return {row.split()[0]: " ".join(row.split()[1:]) for row in out.stdout.splitlines()}


def test_the_next_run_waits_for_the_old_program_after_a_stop_and_after_kill_9(server_factory, tmp_path):
    server = server_factory(extra=["--kill-wait", "60"])  # the old program ends by itself, long before
    log = tmp_path / "log"
    [job] = submit(server, spec_file(tmp_path, CHECKPOINTS, "ckpt", ipus=64))
    wait_for(lambda: lines(log) == ["start 0"])
    for n, stop in enumerate((signal.SIGTERM, signal.SIGKILL)):
        server.kill(stop)
        wait_for(lambda: lines(log)[-1] == f"TERM {n}")  # its supervisor saw the controller go
        server.start()
        assert reasons(server) == {str(job): "PENDING Cleaning"}
        partitions = json.loads(run(server, "vipu", "list", "partitions", "--json").stdout)
        assert [x["name"] for x in partitions] == [f"slurm_{job}"]  # kept: no other job takes its IPUs
        assert lines(log)[-1] == f"TERM {n}"  # the old program still runs, and no new run started
        (tmp_path / f"go{n}").touch()
        wait_for(lambda: lines(log)[-1] == f"start {n + 1}")
        assert lines(log)[-3:] == [f"TERM {n}", f"end {n}", f"start {n + 1}"]  # one after the other, never both
        assert reasons(server) == {str(job): "RUNNING None"}
    assert show(server, job)["requeue_count"] == 2
    (tmp_path / "go2").touch()
    assert run(server, "vipu", "cancel", str(job)).returncode == 0
    wait_for(lambda: lines(log)[-1] == "end 2")


def test_a_preemptor_waiting_for_its_victim_still_waits_after_kill_9(server_factory, tmp_path):
    server = server_factory(extra=["--kill-wait", "60"])
    log = tmp_path / "log"
    [low] = submit(server, spec_file(tmp_path, CHECKPOINTS, "low", ipus=64, qos="low"))
    wait_for(lambda: lines(log) == ["start 0"])
    [high] = submit(server, spec_file(tmp_path, "#!/bin/sh\necho high >> log\n", "high", ipus=64, qos="high"))
    wait_for(lambda: lines(log) == ["start 0", "TERM 0"])
    assert reasons(server) == {str(low): "PENDING Cleaning", str(high): "PENDING Resources"}
    waits = show(server, high)["estimated_start"] - show(server, high)["submit_time"]
    assert 60 <= waits < 70, waits  # the end of its victim's KillWait (the victim was preempted on its submit)
    server.kill(signal.SIGKILL)
    server.start()  # (the preemptor's reason is the first cycle's)
    wait_for(lambda: reasons(server) == {str(low): "PENDING Cleaning", str(high): "PENDING Resources"})
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert {(i.get("partition"), i["state"]) for i in ipus} == {(f"slurm_{low}", "completing")}  # not allocated
    assert lines(log) == ["start 0", "TERM 0"]
    (tmp_path / "go0").touch()
    wait_for(lambda: show(server, high)["state"] == "COMPLETED")
    assert lines(log)[:4] == ["start 0", "TERM 0", "end 0", "high"]
    (tmp_path / "go1").touch()  # its next run, if it has started, ends at once when cancelled
    assert run(server, "vipu", "cancel", str(low)).returncode == 0
    wait_for(lambda: "start 1" not in lines(log) or lines(log)[-1] == "end 1")
