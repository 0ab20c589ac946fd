"""A run's lock (run_locks.py): its supervisor holds it from before the program starts until the program's whole
session is gone, whatever the script left behind; a controller that did not start the run reads it."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.jobs.programs.test_programs_e2e import alive
from tests.jobs.programs.test_signals import launch
from vipu.jobs.programs.hosts import Steps
from vipu.jobs.programs.run_locks import hold, holder, left_running, let_go, lock_path, when_gone


def test_the_supervisor_holds_the_lock_until_what_the_script_left_behind_is_gone(tmp_path):
    steps = Steps()
    spool = tmp_path / "spool"
    script = f"sleep 300 & echo $! > {tmp_path}/child\nwhile [ ! -e {tmp_path}/stop ]; do sleep 0.02; done\n"
    steps.start("left", launch(tmp_path, script))
    child = tmp_path / "child"
    while not (child.is_file() and child.read_text().strip()):
        assert steps.wait("left", timeout=0.02) is None
    [(path, pid)] = left_running(spool, 1).items()
    assert path == lock_path(spool, 1, 1) and pid > 0 and alive(pid)  # the supervisor's pid, for the operator
    assert left_running(spool, 11) == {}  # another job's name starts alike
    (tmp_path / "stop").touch()  # the script ends; its child in the background is killed with its session
    assert steps.wait("left", timeout=30) == {"ended": {"exit_code": 0, "signal": 0}}
    assert not alive(int(child.read_text())) and not path.exists() and left_running(spool, 1) == {}


def test_a_free_or_missing_lock_means_gone_and_a_held_one_is_waited_for(tmp_path, caplog):
    path = tmp_path / "job3.run1.lock"
    assert holder(path) is None
    fd = hold(path)
    assert holder(path) == os.getpid()
    done, closing = threading.Event(), threading.Event()
    when_gone({path: os.getpid()}, done.set, closing, 0, "job 3")  # past KillWait at once: said, and waited for
    said = f"job 3: supervisor(s) {os.getpid()} still hold {path} past KillWait; its IPUs stay in use until they exit"
    deadline = time.monotonic() + 10
    while said not in caplog.messages and time.monotonic() < deadline:
        assert not done.wait(0.02)  # held: not called
    assert said in caplog.messages and not done.is_set()
    let_go(path, fd)
    assert done.wait(10)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)  # left by a supervisor killed before it could remove it
    os.close(fd)
    assert holder(path) is None and not path.exists()


def test_a_watch_ends_without_a_call_when_the_controller_stops(tmp_path):
    path = tmp_path / "job4.run1.lock"
    fd = hold(path)
    called, closing = threading.Event(), threading.Event()
    when_gone({path: os.getpid()}, called.set, closing, 60, "job 4")
    closing.set()
    let_go(path, fd)
    assert not called.wait(0.3)


@pytest.mark.skipif(os.geteuid() != 0, reason="running a program as another account needs a root controller")
def test_under_secure_the_controller_reads_the_lock_of_a_program_run_as_another_account(tmp_path):
    home = Path(tempfile.mkdtemp(prefix="vipu-nobody-"))  # pytest's own folders are root's alone
    try:
        home.chmod(0o777)
        steps = Steps()
        spec = {**launch(home, f"touch {home}/ran\nwhile [ ! -e {home}/stop ]; do sleep 0.02; done\n"),
                "user": {"uid": 65534, "gid": 65534, "groups": []}}
        steps.start("theirs", spec)
        while not (home / "ran").exists():
            assert steps.wait("theirs", timeout=0.02) is None
        assert (home / "ran").stat().st_uid == 65534
        [(path, pid)] = left_running(home / "spool", 1).items()
        assert path.stat().st_uid == 0 and alive(pid)  # the supervisor's, as the controller's user
        (home / "stop").touch()
        assert steps.wait("theirs", timeout=30) == {"ended": {"exit_code": 0, "signal": 0}}
        assert left_running(home / "spool", 1) == {}
    finally:
        shutil.rmtree(home)


def test_a_lock_removed_as_free_before_its_supervisor_locked_it_is_made_again(tmp_path, monkeypatch):
    """rev40: holder() removes a lock it finds free, and a clean stop's tidy reads every lock in the spool; one whose
    supervisor had opened it but not yet locked it was removed, and the supervisor then held a lock on a file no
    longer there, which every controller reads as "no process of that run is alive"."""
    import fcntl

    from vipu.jobs.programs import run_locks

    path = tmp_path / "job5.run1.lock"
    flock, raced = fcntl.flock, []

    class Racing:  # fcntl, but a holder() runs between the supervisor's open and its first flock
        LOCK_EX, LOCK_NB, LOCK_SH = fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_SH

        @staticmethod
        def flock(fd, op):
            if not raced and op & fcntl.LOCK_EX:
                raced.append(holder(path))  # free: removed
            return flock(fd, op)

    monkeypatch.setattr(run_locks, "fcntl", Racing)
    fd = hold(path)
    monkeypatch.undo()
    try:
        assert raced == [None] and holder(path) == os.getpid()
    finally:
        let_go(path, fd)
