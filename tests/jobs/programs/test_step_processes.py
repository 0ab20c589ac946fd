"""Every process a program starts ends with its job, however it left the program's session (Slurm's proctrack
plugins): setsid, nohup, a daemon's double fork (step_processes.py: the supervisor is their subreaper)."""

from __future__ import annotations

from vipu.jobs.programs.hosts import Steps

from tests.jobs.programs.test_programs_e2e import alive
from tests.jobs.programs.test_signals import launch

# each escapee writes its pid; the script waits for all three, then exits (the job's end)
ESCAPES = """setsid sleep 4242 & echo $! > setsid.pid
nohup sleep 4343 >/dev/null 2>&1 & echo $! > nohup.pid
( setsid sh -c 'sleep 4444 & echo $! > daemon.pid.new; mv daemon.pid.new daemon.pid' & )
while [ ! -s daemon.pid ]; do sleep 0.01; done
"""


def pids(folder) -> list[int]:
    return [int((folder / f"{name}.pid").read_text()) for name in ("setsid", "nohup", "daemon")]


def test_what_left_the_session_is_killed_when_the_script_exits(tmp_path):
    """The newcomer's walk: `setsid sleep 4242 &` outlived its COMPLETED job. The supervisor says the run ended only
    once every process below it is gone, so none may be alive by then."""
    steps = Steps()
    steps.start("escapes", {**launch(tmp_path, f"cd {tmp_path}\n" + ESCAPES), "cwd": str(tmp_path)})
    assert steps.wait("escapes", timeout=60) == {"ended": {"exit_code": 0, "signal": 0}}
    escaped = pids(tmp_path)
    assert len(set(escaped)) == 3 and not any(map(alive, escaped))


def test_a_stop_sends_sigterm_to_what_left_the_session_too(tmp_path):
    """A cancel: SIGTERM reaches a setsid process as it reaches the script's group (it may checkpoint), before the
    SIGKILL KillWait later."""
    steps = Steps()
    script = (f"cd {tmp_path}\nsetsid sh -c 'trap \"echo TERM > heard; exit 0\" TERM; echo $$ > setsid.pid;"
              " while :; do sleep 0.05; done' &\nwhile [ ! -s setsid.pid ]; do sleep 0.01; done\n"
              # the script outlives the SIGTERM until the escapee heard it (else its end kills the escapee at once)
              "trap 'while [ ! -s heard ]; do sleep 0.01; done; exit 0' TERM\ntouch ready\nwait\n")
    steps.start("stopped", launch(tmp_path, script))
    while not (tmp_path / "ready").exists():
        assert steps.wait("stopped", timeout=0.05) is None
    steps.terminate("stopped")
    assert steps.wait("stopped", timeout=60) == {"ended": {"exit_code": 0, "signal": 0}}  # before KillWait
    assert (tmp_path / "heard").read_text() == "TERM\n"
    assert not alive(int((tmp_path / "setsid.pid").read_text()))
