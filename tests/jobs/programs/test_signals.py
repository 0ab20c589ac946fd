"""scancel --signal at the supervisor: a signal asked for while the supervisor starts follows the launch, one asked
for while the program runs reaches its process group, and none is taken once the run has ended."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from vipu.jobs.programs.hosts import Steps
from vipu.jobs.programs.step_processes import other_groups


def launch(tmp_path, script: str) -> dict:
    return {"job_id": 1, "run": 1, "script": "#!/bin/bash\n" + script, "args": [], "cwd": str(tmp_path),
            "env": {"PATH": os.environ["PATH"]}, "stdout": str(tmp_path / "out"), "stderr": None, "user": None,
            "kill_wait_s": 5, "spool": str(tmp_path / "spool")}


def test_a_signal_reaches_the_programs_group_whenever_it_is_asked_for(tmp_path):
    steps = Steps()
    steps.start("early", launch(tmp_path, "sleep 60\n"))
    assert steps.signal("early", signal.SIGUSR1)  # most likely before the supervisor has the launch
    assert steps.wait("early", timeout=30) == {"ended": {"exit_code": 0, "signal": signal.SIGUSR1}}
    assert not steps.signal("early", signal.SIGUSR1)  # the run has ended: nothing takes it


def test_a_program_that_traps_the_signal_goes_on(tmp_path):
    steps = Steps()
    ready = tmp_path / "ready"
    script = (f"trap 'echo got USR2 >> {tmp_path}/got' USR2\ntouch {ready}\n"
              f"while [ ! -e {tmp_path}/stop ]; do sleep 0.05; done\n")
    steps.start("trapped", launch(tmp_path, script))
    while not ready.exists():
        assert steps.wait("trapped", timeout=0.05) is None  # still running
    assert steps.signal("trapped", signal.SIGUSR2)
    while not (tmp_path / "got").exists():
        assert steps.wait("trapped", timeout=0.05) is None  # the trap ran and the program goes on
    (tmp_path / "stop").touch()
    assert steps.wait("trapped", timeout=30) == {"ended": {"exit_code": 0, "signal": 0}}
    assert (tmp_path / "got").read_text() == "got USR2\n"  # one signal, one delivery


def test_the_groups_of_a_session_beside_the_programs_own_are_its_other_groups():
    """A script (a session of its own) with a child in its group and one in a group of its own, as poprun's
    instances: only the second is signalled one by one (the processes below the script, here its own root)."""
    script = "sleep 60 & set -m; sleep 61 & echo $!; wait"  # (set -m: a background job gets a group of its own)
    with subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True) as p:
        try:
            apart = int(p.stdout.readline())
            deadline = time.monotonic() + 30
            while not (others := other_groups(p.pid, p.pid)) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert others == [apart] and os.getpgid(apart) == apart
        finally:
            apart_now = other_groups(p.pid, p.pid)  # (before the script goes: then they are no longer below it)
            os.killpg(p.pid, signal.SIGKILL)
            for pid in apart_now:
                os.kill(pid, signal.SIGKILL)


FORWARDS = """trap 'echo shell >> {d}/got; kill -USR1 $child' USR1
python3 -c 'import signal, sys, time
signal.signal(signal.SIGUSR1, lambda *_: (open("{d}/got", "a").write("child\\n"), sys.exit(0)))
open("{d}/ready", "w").close()
time.sleep(600)' &
child=$!
while kill -0 $child 2>/dev/null; do wait $child; done
"""


def test_a_signal_to_the_batch_script_alone_or_to_what_it_started(tmp_path):
    """scancel -b: the script alone, which traps it and forwards it to its child (walk22d defect 3: the child was
    signalled too, and died); the default (scancel signals the steps, not the batch script): the child alone."""
    steps = Steps()
    for to, expected in (("batch", "shell\nchild\n"), ("children", "child\n")):
        folder = tmp_path / to
        folder.mkdir()
        steps.start(to, launch(folder, FORWARDS.format(d=folder)))
        while not (folder / "ready").exists():
            assert steps.wait(to, timeout=0.05) is None
        assert steps.signal(to, signal.SIGUSR1, to)
        assert steps.wait(to, timeout=30) == {"ended": {"exit_code": 0, "signal": 0}}
        assert (folder / "got").read_text() == expected, to
