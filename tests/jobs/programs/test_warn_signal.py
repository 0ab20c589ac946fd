"""sbatch --signal=[B:]SIG[@TIME]: a signal TIME seconds before the time limit, so a program can checkpoint first; to
every process the batch script started (scancel's default), or with B: to the script alone."""

from __future__ import annotations

import math
import re
import sys

import pytest

from vipu.jobs.programs.command_spec import WarnSignal, parse_signal

from tests.jobs.programs.builders import ended, output, run, show


@pytest.mark.parametrize(("text", "want"), [
    ("USR1", WarnSignal(10, 60, False)),  # sbatch's default TIME
    ("B:USR1@120", WarnSignal(10, 120, True)),
    ("sigusr2@0", WarnSignal(12, 0, False)),
    ("15", WarnSignal(15, 60, False)),
])
def test_a_signal_option_as_sbatch_reads_it(text, want):
    assert parse_signal(text) == want


@pytest.mark.parametrize(("text", "says"), [
    ("R:USR1", "R: lets a job overlap a reservation, and the controller has no reservations"),
    ("X:USR1", "X: is not a flag (B: signals the batch script alone)"),
    ("NOPE", "'NOPE' is not a signal"),
    ("65", "'65' is not a signal"),
    ("USR1@70000", "@70000: TIME is whole seconds from 0 to 65535"),
])
def test_a_malformed_signal_option_is_refused_with_the_form(text, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_signal(text)


def test_the_signal_comes_before_the_time_limit_to_the_script_or_to_what_it_started(server, tmp_path):
    """B: the batch script's trap runs (it checkpoints and exits: COMPLETED before the limit); without it the
    script's child gets the signal and the script does not (sh would die of USR1)."""
    (tmp_path / "job.sh").write_text("#!/bin/bash\n#SBATCH --ipus=1\n#SBATCH -t 0:30\n#SBATCH --signal=B:USR1@25\n"
                                     "trap 'echo checkpoint; exit 0' USR1\nwhile :; do sleep 0.05; done\n")
    (tmp_path / "child.py").write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGUSR1, lambda *_: (print('child checkpoint', flush=True), sys.exit(0)))\n"
        "while True:\n    time.sleep(0.05)\n")
    batch = run(server, "vipu", "submit", "-D", str(tmp_path), "--parsable", str(tmp_path / "job.sh"))
    child = run(server, "vipu", "submit", "--ipus", "1", "-t", "0:30", "--signal", "USR1@25", "-D", str(tmp_path),
                "--wrap", f"{sys.executable} child.py", "--parsable")
    assert batch.returncode == 0 and child.returncode == 0, batch.stderr + child.stderr
    for job, said in ((int(batch.stdout), "checkpoint\n"), (int(child.stdout), "child checkpoint\n")):
        detail = ended(server, job, timeout=60)
        assert (detail["state"], detail["exit_code"], detail["signal"]) == ("COMPLETED", 0, 0)
        assert output(tmp_path, job) == said
        assert detail["end_time"] - detail["start_time"] < 29  # before its limit
    assert show(server, int(batch.stdout))["spec"]["workload"]["signal"] == "B:USR1@25"  # as written


def test_a_time_past_the_limit_signals_once_at_the_first_check_after_the_start(server, tmp_path):
    """TIME longer than the limit: slurmctld neither refuses nor drops it, and sends it at its first time-limit check
    after the start (every 30 s; 14 s after the start with -t 2 --signal=B:USR1@300 on Slurm 22.05): here at the first
    check, 5 s after the start, once its trap is set; the job runs on to its limit (TIMEOUT)."""
    (tmp_path / "job.sh").write_text("#!/bin/bash\n#SBATCH --ipus=1\n#SBATCH -t 0:12\n#SBATCH --signal=B:USR1@300\n"
                                     "trap 'echo warned after $SECONDS s' USR1\nwhile :; do sleep 0.05; done\n")
    job = run(server, "vipu", "submit", "-D", str(tmp_path), "--parsable", str(tmp_path / "job.sh"))
    assert job.returncode == 0, job.stderr
    detail = ended(server, int(job.stdout), timeout=60)
    assert detail["state"] == "TIMEOUT"
    said, stepd = output(tmp_path, int(job.stdout)).splitlines()  # once, after its trap was set: not ended by it
    assert re.fullmatch(r"warned after \d+ s", said), said
    assert stepd.endswith(" DUE TO TIME LIMIT ***"), stepd  # then its time limit, as slurmstepd says it


@pytest.mark.parametrize(("started", "end_by", "before_s", "at"), [
    (100, 400, 60, 340),  # TIME before the limit
    (100, 112, 300, 105),  # TIME past the limit: at the first check after the start, 5 s
    (100, 106, 6, 103),  # TIME the whole limit: the same
    (100, 104, 300, 102),  # a limit shorter than the check: halfway to it
    (100, 108, 300, 104),  # a limit under two checks: halfway too, before the limit's SIGTERM
    (100, 101, 60, 100.5),  # a 1-s limit
    (100, 160, 58, 105),  # TIME short of the limit, but before the first check: at the check
    (100, math.inf, 60, math.inf),  # no limit (UNLIMITED): never
    (100, 400, 0, 400),  # @0: at the limit itself
])
def test_the_signals_moment_is_time_before_the_limit_and_never_before_the_first_check(started, end_by, before_s,
                                                                                      at):
    assert WarnSignal(10, before_s, True).moment(started, end_by, check_s=5) == at


def test_signal_is_refused_for_a_workload_with_no_program(server):
    out = run(server, "vipu", "submit", "--ipus", "1", "--duration", "1s", "--signal", "USR1")
    assert out.returncode == 2 and "--signal is for a batch script or --wrap" in out.stderr
    bad = run(server, "vipu", "submit", "--ipus", "1", "--signal", "R:USR1", "--wrap", "true")
    assert bad.returncode == 2 and "--signal" in bad.stderr and "R: lets a job overlap a reservation" in bad.stderr
