"""A run whose watching fails (run_watch.py) still ends, saying why, and frees its tensors; the jobs beside it end
with their own exit codes. Regression (security walk): with the controller short of memory, "Exception in thread
vipu-program-N: RuntimeError: can't start new thread" left a job RUNNING after its program exited, its tensors never
freed, and two later jobs RUNNING after they exited 0 (recorded CANCELLED when cancelled)."""

from __future__ import annotations

import threading

import pytest

from vipu.access import ANYONE
from vipu.jobs.programs.hosts import Steps
from vipu.jobs.programs.run_exits import exit_path
from vipu.scheduler.job_filter import NO_FILTER
from vipu.scheduler.job_states import TERMINAL, JobState

from tests.jobs.programs.test_program_log import plane, submit  # noqa: F401 - the fixture
from tests.server.test_training_logs import step_until

NO_THREAD = "can't start new thread"


def no_thread_for(monkeypatch, prefix: str) -> None:
    """Threads whose name starts with `prefix` cannot be started, as when the controller is out of memory."""
    start = threading.Thread.start

    def refuse(thread):
        if thread.name.startswith(prefix):
            raise RuntimeError(NO_THREAD)
        return start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse)


def ended(plane, job: int):
    step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL)
    return plane.scheduler.job(job)


@pytest.fixture
def sessions_on(plane):  # noqa: F811
    """Runs get a session on their IPUs (a DeviceService address; no program here calls it)."""
    plane.device_address = "127.0.0.1:9"
    return plane


def test_no_thread_to_free_a_runs_tensors_in_frees_them_at_once_and_its_job_ends_with_its_exit_code(
        sessions_on, tmp_path, monkeypatch):
    plane = sessions_on
    no_thread_for(monkeypatch, "vipu-free-")
    first, second = submit(plane, tmp_path, "#!/bin/sh\nexit 0\n"), submit(plane, tmp_path, "#!/bin/sh\nexit 3\n")
    done, failed = ended(plane, first), ended(plane, second)
    assert (done.state, done.exit_code) == (JobState.COMPLETED, 0)
    assert (failed.state, failed.exit_code) == (JobState.FAILED, 3)
    runs = plane.runners["command"].runs
    assert runs[first].session.freed.is_set() and runs[second].session.freed.is_set()
    assert plane.sessions.memory.held == 0


def test_a_watch_lost_while_its_program_runs_stops_it_and_ends_its_job_node_fail(plane, tmp_path, monkeypatch):  # noqa: F811
    lost = submit(plane, tmp_path, "#!/bin/sh\nexec sleep 60\n", requeue=False)
    wait = Steps.wait

    def wait_fails(steps, key, timeout=None):
        if key == f"job{lost}.run1":
            raise RuntimeError(NO_THREAD)
        return wait(steps, key, timeout)

    monkeypatch.setattr(Steps, "wait", wait_fails)
    beside = submit(plane, tmp_path, "#!/bin/sh\nexit 3\n")
    job = ended(plane, lost)
    assert (job.state, job.exit_code) == (JobState.NODE_FAIL, 1)
    assert job.ended_by == f"the controller could not go on watching it: RuntimeError: {NO_THREAD}"
    # stopped: its supervisor ends well before the program's 60 s, by SIGTERM (or before it launched it)
    stopped = wait(plane.runners["command"].local, f"job{lost}.run1", 30)
    assert stopped is not None and stopped.get("ended", {"signal": 15})["signal"] == 15, stopped
    other = ended(plane, beside)
    assert (other.state, other.exit_code) == (JobState.FAILED, 3)


def test_a_fault_in_a_runs_end_still_ends_its_job_with_its_exit_code(plane, tmp_path, monkeypatch):  # noqa: F811
    runner = plane.runners["command"]
    close, faults = runner._close, []

    def close_fails_once(run, why):
        if not faults:
            faults.append(run.job_id)
            raise MemoryError()
        return close(run, why)

    monkeypatch.setattr(runner, "_close", close_fails_once)
    job = ended(plane, submit(plane, tmp_path, "#!/bin/sh\nexit 4\n"))
    assert (job.state, job.exit_code) == (JobState.FAILED, 4) and faults == [job.id]
    again = ended(plane, submit(plane, tmp_path, "#!/bin/sh\nexit 0\n"))
    assert (again.state, again.exit_code) == (JobState.COMPLETED, 0)


def test_no_thread_to_watch_a_run_fails_its_job_saying_so_and_frees_its_ipus(plane, tmp_path, monkeypatch):  # noqa: F811
    no_thread_for(monkeypatch, "vipu-program-")
    job = ended(plane, submit(plane, tmp_path, "#!/bin/sh\nexit 0\n", ipus=16))
    assert job.state is JobState.FAILED and NO_THREAD in job.ended_by
    monkeypatch.undo()
    after = ended(plane, submit(plane, tmp_path, "#!/bin/sh\nexit 0\n", ipus=16))  # the whole Pod: all freed
    assert (after.state, after.exit_code) == (JobState.COMPLETED, 0)


def test_a_fault_in_the_end_of_a_run_stopped_from_outside_still_keeps_its_exit_code_and_drops_its_record(
        plane, tmp_path, monkeypatch):  # noqa: F811
    """Regression: when the end of a cancelled job's run failed, run_watch returned early (its job had ended
    already), so its supervisor's exit record stayed in the spool and its ExitCode stayed untold."""
    runner = plane.runners["command"]
    close = runner._close

    def close_fails_at_the_end(run, why):
        if "program has ended" in why:
            raise MemoryError()
        return close(run, why)

    monkeypatch.setattr(runner, "_close", close_fails_at_the_end)
    job = submit(plane, tmp_path, "#!/bin/sh\ntrap 'exit 3' TERM\ntouch started\nwhile true; do sleep 0.02; done\n",
                 requeue=False)
    step_until(plane, lambda: (tmp_path / "started").exists())
    plane.jobs.cancel([job], NO_FILTER, False, ANYONE)
    run = runner.runs[job]
    step_until(plane, run.finished.is_set)
    assert not exit_path(runner.spool, job, 1).exists()
    cancelled = plane.scheduler.job(job)
    assert (cancelled.state, cancelled.exit_code, cancelled.exit_signal) == (JobState.CANCELLED, 3, 0)
