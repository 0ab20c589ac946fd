"""end33: a program that ends while its controller is down (kill -9) ends its run when it did, as its supervisor
recorded it (run_exits.py), not when the controller started again: the outage is no run time in End, Elapsed,
`vipu history` or the usage charged."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.jobs.programs.test_programs_e2e import spec_file
from tests.jobs.programs.test_restart_waits import lines
from vipu.jobs.programs.spool import spool_for
from vipu.jobs.programs.run_exits import exit_path

# its supervisor sends SIGTERM once the controller has gone; the program says so and exits 3
ENDS_ON_TERM = "#!/bin/bash\ntrap 'echo TERM >> log; exit 3' TERM\necho start >> log\nwhile true; do sleep 0.02; done\n"
OUTAGE_S = 3.0  # how long the controller stays down after the program's end: far above any timing slack


def test_a_program_that_ends_while_the_controller_is_down_ends_its_run_then(server_factory, tmp_path):
    server = server_factory()
    log = tmp_path / "log"
    [job] = submit(server, spec_file(tmp_path, ENDS_ON_TERM, "away", requeue=False))
    wait_for(lambda: lines(log) == ["start"])
    started = show(server, job)["start_time"]
    server.kill(signal.SIGKILL)
    recorded = exit_path(spool_for(server.state_dir), job, 1)
    wait_for(lambda: recorded.exists())
    ended = json.loads(recorded.read_text())
    assert (ended["exit_code"], ended["signal"], lines(log)) == (3, 0, ["start", "TERM"])
    wait_for(lambda: time.time() > ended["at"] + OUTAGE_S, timeout=OUTAGE_S + 10)  # the outage goes on
    restarted = time.time()
    server.start()
    shown = show(server, job)
    assert shown["end_time"] < restarted - OUTAGE_S + 1  # not the restart's end ...
    assert shown["end_time"] == pytest.approx(ended["at"], abs=0.01)  # ... but the program's
    assert shown["state"] == "NODE_FAIL" and "as recorded where it ran" in shown["detail"]["recovery"]
    assert (shown["exit_code"], shown["signal"]) == (3, 0)
    out = run(server, "vipu", "history", "-j", str(job), "-n", "-P", "-o", "State,ExitCode,ElapsedRaw,End")
    assert out.returncode == 0, out.stderr
    state, code, elapsed_raw, end = out.stdout.strip().split("|")
    assert (state, code) == ("NODE_FAIL", "3:0")
    assert int(elapsed_raw) == int(ended["at"] - started)  # seconds it ran, not the outage's too
    assert end == time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ended["at"]))

    # a run whose end the controller heard leaves no record of it, once its end is written
    [heard] = submit(server, spec_file(tmp_path, "#!/bin/sh\nexit 0\n", "heard"))
    wait_for(lambda: show(server, heard)["state"] == "COMPLETED")
    wait_for(lambda: not exit_path(spool_for(server.state_dir), heard, 1).exists())


# deaf to SIGTERM (it says it heard it, and goes on): only a SIGKILL ends it
DEAF_TO_TERM = ("#!/bin/bash\ntrap 'echo TERM >> log' TERM\necho $$ > pid\necho start >> log\n"
                "while true; do sleep 0.02; done\n")


def test_a_program_still_ending_at_the_restart_gets_its_exit_code_once_it_has_ended(server_factory, tmp_path):
    """walk34: a program still in KillWait when the controller came back had its run ended at the restart, ExitCode
    0:0 for good; its supervisor's record of what ended it (here a SIGKILL: 0:9) was never read. End stays the
    restart's (when it was stopped; the rest is Slurm's COMPLETING)."""
    server = server_factory(extra=["--kill-wait", "60"])  # the test SIGKILLs it long before its supervisor would
    log = tmp_path / "log"
    [job] = submit(server, spec_file(tmp_path, DEAF_TO_TERM, "deaf", requeue=False))
    wait_for(lambda: lines(log) == ["start"])
    server.kill(signal.SIGKILL)
    wait_for(lambda: lines(log) == ["start", "TERM"])  # its supervisor saw the controller go
    server.start()
    stopped = show(server, job)
    assert (stopped["state"], stopped["exit_code"], stopped["signal"]) == ("COMPLETING", None, 0)  # still ending
    os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)
    wait_for(lambda: json.loads(run(server, "vipu", "list", "partitions", "--json").stdout) == [])  # it has gone
    for _ in range(2):  # and again after a restart: written in the store
        shown = show(server, job)
        assert (shown["state"], shown["exit_code"], shown["signal"]) == ("NODE_FAIL", 0, 9)
        assert shown["end_time"] == stopped["end_time"]
        out = run(server, "vipu", "history", "-j", str(job), "-n", "-P", "-o", "State,ExitCode")
        assert out.stdout.split() == ["NODE_FAIL|0:9"], out.stderr
        server.kill(signal.SIGTERM)
        server.start()


def test_a_requeued_run_still_ending_at_the_restart_gets_its_exit_code_on_its_row(server_factory, tmp_path):
    """hist35: the same, for a job the restart requeued: its lost run's NODE_FAIL row in `vipu history -D` shows
    what ended its program (0:9), though the job was back in the queue by then; the next run shows its own."""
    server = server_factory(extra=["--kill-wait", "60"])
    log = tmp_path / "log"
    again = DEAF_TO_TERM.replace("#!/bin/bash\n", "#!/bin/bash\nif [ -e ran ]; then exit 0; fi\ntouch ran\n")
    [job] = submit(server, spec_file(tmp_path, again, "deaf"))
    wait_for(lambda: lines(log) == ["start"])
    server.kill(signal.SIGKILL)
    wait_for(lambda: lines(log) == ["start", "TERM"])
    server.start()
    assert show(server, job)["state"] == "PENDING"
    os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)
    wait_for(lambda: show(server, job)["state"] == "COMPLETED")
    out = run(server, "vipu", "history", "-D", "-j", str(job), "-n", "-P", "-o", "State,ExitCode")
    assert out.stdout.split() == ["NODE_FAIL|0:9", "COMPLETED|0:0"], out.stderr
