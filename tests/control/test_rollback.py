"""A request answered with an error changed nothing, now or after a restart; one answered OK is durable. The disk
fills for real as SQLite sees it: PRAGMA max_page_count (SQLITE_FULL, 'database or disk is full')."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time

import pytest

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.control.startup import open_plane
from vipu.errors import Unavailable
from vipu.scheduler.job_filter import NO_FILTER
from vipu.scheduler.job_states import JobState
from vipu.store import Dropped
from tests.test_store import fill, free, stalled

HELD = b'{"ipus": 1, "time_limit": "10m", "hold": true}'
SLEEP = b'{"ipus": 1, "time_limit": "10m", "workload": {"kind": "sleep", "duration": "5m"}}'
WAIT_S = 30  # a bound only a broken store reaches (its retry thread tries every second)
NOTHING_CHANGED = r"could not be written \(database or disk is full\), so nothing changed: free space"


def submit(plane, spec=HELD, n=1) -> list[int]:
    done = plane.jobs.submit([SubmitRequest(spec, {}) for _ in range(n)], ANYONE)
    return [job.id for x in done for job in x.jobs]


def states(plane) -> dict[int, JobState]:
    return {x.id: x.state for x in plane.job_views.queue(ANYONE).items}


def freed(plane) -> None:
    """Space again; the store's retry thread finds out and health says SERVING."""
    serving = threading.Event()
    plane.watch_store(lambda writable: writable and serving.set())
    free(plane.store)
    assert serving.wait(WAIT_S) and plane.store_writes().writable


def restarted(plane, tmp_path):
    plane.stop()
    plane.store.close()
    return open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)


def test_a_refused_submit_is_not_queued_now_nor_after_a_restart(plane, tmp_path):
    assert submit(plane) == [1]
    fill(plane.store)
    with pytest.raises(Dropped, match=NOTHING_CHANGED):
        submit(plane, n=100)  # as `vipu submit specs/*.yaml`
    assert states(plane) == {1: JobState.PENDING}
    assert not plane.store_writes().writable
    with pytest.raises(Unavailable, match=r"cannot be written just now \(database or disk is full\), so nothing"):
        submit(plane)  # refused before it touches anything
    assert states(plane) == {1: JobState.PENDING}
    freed(plane)
    assert submit(plane) == [2]  # the ids the refused ones had are given again: they were never stored
    again = restarted(plane, tmp_path)
    try:
        assert states(again) == {1: JobState.PENDING, 2: JobState.PENDING}
    finally:
        again.store.close()


def test_a_refused_cancel_leaves_the_jobs_pending(plane, tmp_path):
    ids = submit(plane, n=200)  # (their cancelled records more than the free room the full pages still hold)
    fill(plane.store)
    with pytest.raises(Dropped, match=NOTHING_CHANGED):
        plane.jobs.cancel(ids, NO_FILTER, False, ANYONE)
    assert set(states(plane).values()) == {JobState.PENDING} and len(states(plane)) == 200
    freed(plane)
    assert submit(plane) == [201]
    again = restarted(plane, tmp_path)
    try:
        assert set(states(again).values()) == {JobState.PENDING} and len(states(again)) == 201
    finally:
        again.store.close()


def test_a_cycle_whose_starts_are_not_written_leaves_nothing_running(plane, tmp_path):
    submit(plane, SLEEP, n=16)
    fill(plane.store)
    with pytest.raises(Dropped):
        plane.step()  # the loop's step: its starts (jobs RUNNING, partitions made) are not written
    assert set(states(plane).values()) == {JobState.PENDING}
    assert not plane.controller.state.partitions and not plane.scheduler.table.running
    freed(plane)
    plane.step()
    assert set(states(plane).values()) == {JobState.RUNNING}
    again = restarted(plane, tmp_path)
    try:
        assert set(states(again).values()) == {JobState.RUNNING} and len(again.controller.state.partitions) == 16
    finally:
        again.store.close()


def disk_full(rows, gone, history):
    """A cancel of running jobs frees pages (their partitions) as it writes: no room is short, so the failure is
    made here as SQLite reports it."""
    raise sqlite3.OperationalError("database or disk is full")


def test_a_refused_cancel_of_running_jobs_leaves_them_running(plane, monkeypatch):
    ids = submit(plane, SLEEP, n=16)
    plane.step()
    monkeypatch.setattr(plane.store, "_write", disk_full)
    with pytest.raises(Dropped, match=NOTHING_CHANGED):
        plane.jobs.cancel(ids, NO_FILTER, False, ANYONE)
    assert states(plane) == {i: JobState.RUNNING for i in ids}  # a sleep's run resumes: nothing of it had gone
    assert len(plane.controller.state.partitions) == 16
    assert all(x.recovery == "" or "undoing" in x.recovery for x in plane.job_views.queue(ANYONE).items)


def test_programs_launched_for_starts_not_written_are_stopped(plane, tmp_path):
    """Their starts are undone, so their programs must not run on: no job the store does not know as running runs."""
    spec = {"ipus": 1, "time_limit": "5m", "workload": {
        "kind": "command", "script": f"#!/bin/bash\necho $$ > {tmp_path}/pid-$SLURM_JOB_ID\nexec sleep 300\n",
        "submit_dir": str(tmp_path)}}
    ids = submit(plane, json.dumps(spec).encode(), n=16)
    fill(plane.store)
    with pytest.raises(Dropped):
        plane.step()
    assert set(states(plane).values()) == {JobState.PENDING} and not plane.controller.state.partitions
    for job in ids:
        assert plane.runners["command"].runs[job].finished.wait(WAIT_S)  # stopped before or after it started
    for pid in tmp_path.glob("pid-*"):
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.read_text()), 0)
    assert set(states(plane).values()) == {JobState.PENDING}


def test_a_read_that_waited_for_a_write_that_failed_shows_the_state_without_it(plane, monkeypatch):
    """A read copies the state, then waits until what it copied is durable: if that write fails, it copies again."""
    submit(plane)
    go = threading.Event()
    plane.store._writer.submit(go.wait)  # the writing thread busy: writes and the read's wait queue up behind it
    try:
        refused: list = []
        writer = threading.Thread(target=lambda: refused.append(pytest.raises(Dropped, submit, plane)), daemon=True)
        writer.start()
        copied, flush = threading.Event(), plane.store.flush
        reads: list = []
        reader = threading.Thread(target=lambda: reads.append(plane.read()), daemon=True)

        def flush_seen(*args, **kwargs):
            if threading.current_thread() is reader:
                copied.set()  # the read has copied the state with job 2 in it, and waits for its write
            return flush(*args, **kwargs)

        monkeypatch.setattr(plane.store, "flush", flush_seen)
        assert wait_until(lambda: plane.store.enqueued == plane.store.settled + 1)  # job 2 queued
        reader.start()
        assert copied.wait(WAIT_S)
        monkeypatch.setattr(plane.store, "_write", disk_full)
    finally:
        go.set()
    writer.join(WAIT_S)
    reader.join(WAIT_S)
    assert len(refused) == 1 and [sorted(r.queue.table.jobs) for r in reads] == [[1]]
    assert states(plane) == {1: JobState.PENDING}


def wait_until(condition) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)  # (a poll: the event is another thread's enqueue, which signals nothing)
    return True


def running_program(plane, tmp_path):
    """A running program that ends (exit code 3, a line in tmp_path/runs) once a line is written to the FIFO."""
    go = tmp_path / "go"
    os.mkfifo(go)
    spec = {"ipus": 1, "time_limit": "5m", "workload": {
        "kind": "command", "script": f"#!/bin/bash\nread x < {go}\necho ran >> {tmp_path}/runs\nexit 3\n",
        "submit_dir": str(tmp_path)}}
    [job] = submit(plane, json.dumps(spec).encode())
    plane.step()
    return job, go


@pytest.mark.parametrize("fails", ["at its end's write", "before it ends"])
def test_a_program_that_ends_while_the_store_cannot_write_keeps_its_end_and_never_runs_again(plane, tmp_path,
                                                                                           monkeypatch, fails):
    """Regression: its end was undone with the write that carried it, and the rollback ended the job NODE_FAIL "the
    controller stopped while it ran" and requeued it: the program that had finished ran again, its output
    truncated."""
    job, go = running_program(plane, tmp_path)
    assert states(plane) == {job: JobState.RUNNING}
    monkeypatch.setattr(plane.store, "_write", disk_full)
    if fails == "before it ends":
        with pytest.raises(Dropped):
            submit(plane)
        assert not plane.store_writes().writable
    with open(go, "w") as f:  # (opens once the program reads: it runs)
        f.write("go\n")
    assert plane.runners["command"].runs[job].finished.wait(WAIT_S)
    assert states(plane) == {job: JobState.RUNNING}  # its end waits for the store
    assert len(plane.controller.state.partitions) == 1
    serving = threading.Event()
    plane.watch_store(lambda writable: writable and serving.set())
    monkeypatch.undo()
    assert serving.wait(WAIT_S)
    plane.step()
    ended = plane.scheduler.table.jobs[job]
    assert (ended.state, ended.exit_code, ended.requeue_count) == (JobState.FAILED, 3, 0)
    assert not plane.controller.state.partitions
    assert (tmp_path / "runs").read_text() == "ran\n"  # once
    again = restarted(plane, tmp_path)
    try:
        stored = again.scheduler.table.jobs[job]
        assert (stored.state, stored.exit_code, stored.end_time) == (JobState.FAILED, 3, ended.end_time)
    finally:
        again.store.close()


@pytest.mark.parametrize("stalls", ["in its end's write", "before it ends"])
def test_a_program_that_ends_while_a_write_stalls_keeps_its_real_end(plane, tmp_path, stalls):
    """Regression: on a frozen disk, a program that ended got the thaw's time as its end (walk23c, defect 2)."""
    plane.store.write_timeout_s = 0.5
    job, go = running_program(plane, tmp_path)
    with stalled(plane.store) as inside:
        if stalls == "before it ends":
            with pytest.raises(Unavailable, match="not known until that write ends"):
                submit(plane)  # its write is the one stuck in the kernel
            assert not plane.store_writes().writable
        with open(go, "w") as f:  # (opens once the program reads: it runs)
            f.write("go\n")
        assert plane.runners["command"].runs[job].finished.wait(WAIT_S)
        assert inside.wait(WAIT_S) and wait_until(lambda: not plane.store_writes().writable)
        assert wait_until(lambda: states(plane).get(job) is JobState.RUNNING)  # its end waits for the store
        thawed = plane.now()
    serving = threading.Event()
    plane.watch_store(lambda writable: writable and serving.set())
    assert serving.wait(WAIT_S)
    plane.step()
    ended = plane.scheduler.table.jobs[job]
    assert (ended.state, ended.exit_code, ended.requeue_count) == (JobState.FAILED, 3, 0)
    assert ended.end_time < thawed  # its real end, not the thaw's
    assert (tmp_path / "runs").read_text() == "ran\n"  # once
    kept = {job: JobState.FAILED, **({job + 1: JobState.PENDING} if stalls == "before it ends" else {})}
    again = restarted(plane, tmp_path)
    try:
        assert {i: x.state for i, x in again.scheduler.table.jobs.items()} == kept  # the stalled submit ended well
        assert again.scheduler.table.jobs[job].end_time == ended.end_time
    finally:
        again.store.close()


def test_the_event_log_names_each_job_whose_logged_submit_or_change_was_undone(plane, caplog, monkeypatch):
    """Regression: `job 28 of root submitted` was logged for a submit the full disk refused; the undo line named no
    job, and 28 was later logged as submitted again."""
    [held] = submit(plane)
    monkeypatch.setattr(plane.store, "_write", disk_full)
    with caplog.at_level("INFO", logger="vipu.events"):
        with pytest.raises(Dropped):
            submit(plane, n=2)
        events = [(r.fields["event"], r.fields["job_id"], r.getMessage()) for r in caplog.records
                  if r.name == "vipu.events"]
    assert [(e, i) for e, i, _ in events] == [("job_submitted", 2), ("job_submitted", 3), ("job_undone", 2),
                                              ("job_undone", 3)]
    undone = [line for e, _, line in events if e == "job_undone"]
    user = plane.scheduler.table.jobs[held].user
    assert undone == [f"job {i} of {user} undone: its submit was not written (the state store could not write), by"
                      " controller" for i in (2, 3)], undone
    assert states(plane) == {held: JobState.PENDING}


def test_an_outage_is_one_write_failure_and_its_log_line_names_the_cause(plane, caplog, monkeypatch):
    """Regression: the retry thread's tries of the rollback's own records, each second while the disk stayed full,
    each counted in vipu_store_write_failures_total (2 to 13 in 10 s), and the log never said why the writes failed,
    though the runbook sends the operator there."""
    ids = submit(plane, SLEEP, n=2)
    plane.step()
    tries = []

    def full(rows, gone, history):
        tries.append(len(rows))
        disk_full(rows, gone, history)

    monkeypatch.setattr(plane.store, "_write", full)
    with caplog.at_level("WARNING", logger="vipu.recovery"):
        with pytest.raises(Dropped):
            plane.jobs.cancel(ids, NO_FILTER, False, ANYONE)
        assert wait_until(lambda: len(tries) >= 3), tries  # the cancel's write, then the retry thread's, each second
    assert plane.store.write_failures == 1
    assert (f"the state store {plane.store.path} could not be written (database or disk is full): changes since its"
            " last write are undone") in caplog.text


def test_the_undoing_is_logged_once_an_outage_not_each_retry_nor_a_line_a_running_job(plane, caplog, monkeypatch):
    """Regression: while the disk stayed full, each retry (every second) logged the undoing again, and a line for
    each running job: 20 warnings and 38 lines for 2 jobs in 20 s."""
    ids = submit(plane, SLEEP, n=2)
    plane.step()
    monkeypatch.setattr(plane.store, "_write", disk_full)
    with caplog.at_level("INFO", logger="vipu.recovery"):
        with pytest.raises(Dropped):
            plane.jobs.cancel(ids, NO_FILTER, False, ANYONE)
        for _ in range(3):  # as the retry thread does each second: the rollback's own notes fail to write too
            with pytest.raises(Unavailable):
                plane.store.flush()
            plane._roll_back()
        lines = [r.getMessage() for r in caplog.records if r.name == "vipu.recovery"]
    assert sum("changes since its last write are undone" in line for line in lines) == 1, lines
    assert sum("resumed after" in line for line in lines) == 2, lines  # one for each running job, once
    monkeypatch.undo()
    with caplog.at_level("WARNING", logger="vipu.store"):
        freed(plane)
    assert [r.getMessage() for r in caplog.records if r.name == "vipu.store"].count(
        f"the state store {plane.store.path} writes again") == 1
    assert states(plane) == {i: JobState.RUNNING for i in ids}


def test_an_undone_submit_is_not_logged_as_submitted_after_its_undoing(plane, monkeypatch):
    """Regression: `job 20 submitted` was logged with a later time than `job 20 undone`: the log writer works a
    commit's lines out on its own thread, and under load it did so after the write failed and the rollback logged
    the undoing. The writer is kept busy here until the undoing is logged, as under that load."""
    import io
    import logging

    from vipu.server import log_format

    made: list[logging.LogRecord] = []  # as each line is made, in the thread that makes it

    class Made(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            made.append(record)

    root, events, busy, out = logging.getLogger(), logging.getLogger("vipu.events"), threading.Event(), io.StringIO()
    handlers, level = root.handlers[:], root.level
    log_format.setup("json", "info", out)
    events.addHandler(Made())
    try:
        log_format._writer.later(busy.wait)
        [held] = submit(plane)
        monkeypatch.setattr(plane.store, "_write", disk_full)
        with pytest.raises(Dropped):
            submit(plane)
        assert [r.fields["event"] for r in made] == ["job_undone"]  # the submits' lines are not made yet
        busy.set()
    finally:
        log_format.stop()
        events.handlers.clear()
        root.handlers[:] = handlers
        root.setLevel(level)  # (not root.level =: that leaves the loggers' isEnabledFor cache stale)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["event"], x["job_id"]) for x in lines if "event" in x] == [
        ("job_submitted", held), ("job_submitted", held + 1), ("job_undone", held + 1)]
    at = {(r.fields["event"], r.fields["job_id"]): r.created for r in made}
    assert at["job_submitted", held] <= at["job_submitted", held + 1] <= at["job_undone", held + 1]
    assert [x["time"] for x in lines] == sorted(x["time"] for x in lines)
