"""The controller's spool folder (spool.py): a name no other user can work out, kept across restarts, and a new one
when a folder of that name is gone or not the controller's own; a clean stop removes it once nothing in it is
needed."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tests.jobs.programs.test_program_log import submit
from tests.server.test_training_logs import step_until
from vipu.control.startup import open_plane
from vipu.jobs.programs import spool as spools
from vipu.jobs.programs.run_locks import hold, lock_path
from vipu.jobs.programs.spool import NAME_FILE, discard, spool_for, tidy
from vipu.scheduler.job_states import TERMINAL, JobState


def _gone(*folders: str) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_spool_has_a_random_name_made_by_its_first_supervisor_and_found_again_by_a_restart(tmp_path):
    first = spool_for(tmp_path)
    try:
        assert (tmp_path / NAME_FILE).read_text() == first + "\n"
        assert not os.path.lexists(first)  # made by the first supervisor (stepd.own_spool): none for no program
        os.mkdir(first, 0o711)
        assert spool_for(tmp_path) == first  # a restart: the same folder, with what its supervisors left
        other = tmp_path / "other"
        other.mkdir()
        assert spool_for(other) not in (first, spools._before(tmp_path))  # not worked out from the state's path
    finally:
        _gone(first)


def test_a_spool_folder_gone_gets_a_new_name(tmp_path):
    """A user who learnt the name (a job's program sees its script's path) could make that folder first once it is
    gone: the name is reused only with its folder there."""
    first = spool_for(tmp_path)
    os.mkdir(first, 0o711)
    os.rmdir(first)
    assert spool_for(tmp_path) != first


def test_a_spool_that_is_not_the_controllers_own_gets_a_new_name(tmp_path):
    """Regression: the name was a digest of the state folder's path, so any user could make it first in a fresh /tmp
    and every program failed to start."""
    first = spool_for(tmp_path)
    os.mkdir(first, 0o777)
    os.chmod(first, 0o777)  # as a folder another user made would be to this one: not its own
    second = spool_for(tmp_path)
    try:
        assert second != first and (tmp_path / NAME_FILE).read_text() == second + "\n"
        os.mkdir(second, 0o711)
        os.rmdir(first)
        os.symlink(second, first)  # a link is not its own either
        (tmp_path / NAME_FILE).write_text(first + "\n")
        assert spool_for(tmp_path) not in (first, second)
    finally:
        os.unlink(first)
        _gone(second)


def test_a_damaged_name_file_draws_a_new_name_and_an_old_state_keeps_its_spool(tmp_path):
    (tmp_path / NAME_FILE).write_text("/etc\n")  # not a spool's name: never used
    drawn = spool_for(tmp_path)
    assert os.path.basename(drawn).startswith("vipu-spool-") and os.path.dirname(drawn) != "/etc"
    _gone(drawn)
    (tmp_path / NAME_FILE).unlink()
    before = spools._before(tmp_path)  # a state folder from before names were drawn: its spool is taken on
    os.mkdir(before, 0o711)
    try:
        assert spool_for(tmp_path) == before and spool_for(tmp_path) == before
    finally:
        _gone(before)


def test_a_drawn_name_taken_already_is_not_used(tmp_path, monkeypatch):
    """A folder of the drawn name, another user's (or a link), is never taken for the controller's."""
    taken = os.path.join(tempfile.gettempdir(), "vipu-spool-" + "ab" * 8)
    os.mkdir(taken)
    draws = iter(["ab" * 8, "cd" * 8])
    monkeypatch.setattr(spools.secrets, "token_hex", lambda n: next(draws))
    try:
        assert spool_for(tmp_path) == os.path.join(tempfile.gettempdir(), "vipu-spool-" + "cd" * 8)
    finally:
        _gone(taken)


def _run_files(spool: str, job_id: int, run: int, *kinds: str) -> None:
    for kind in kinds:
        Path(spool, f"job{job_id}.run{run}.{kind}").write_text("")


def test_tidy_removes_what_no_restart_needs_and_then_the_folder(tmp_path):
    spool = spool_for(tmp_path)
    os.mkdir(spool, 0o711)
    _run_files(spool, 1, 1, "exit", "lock", "script")  # ended, its end in the store
    _run_files(spool, 2, 3, "exit.new")  # half written by a supervisor killed meanwhile
    _run_files(spool, 4, 1, "exit")  # a restart reads it
    try:
        assert not tidy(spool, lambda job_id, run: (job_id, run) == (4, 1))
        assert os.listdir(spool) == ["job4.run1.exit"]
        assert tidy(spool, lambda job_id, run: False) and not os.path.lexists(spool)
    finally:
        _gone(spool)


def test_tidy_keeps_a_run_whose_supervisor_is_alive_and_what_no_supervisor_wrote(tmp_path):
    spool = spool_for(tmp_path)
    os.mkdir(spool, 0o711)
    _run_files(spool, 1, 1, "script")
    Path(spool, "notes").write_text("")
    lock = hold(lock_path(spool, 1, 1))  # its supervisor still ends its program
    try:
        assert not tidy(spool, lambda job_id, run: False)
        assert sorted(os.listdir(spool)) == ["job1.run1.lock", "job1.run1.script", "notes"]
    finally:
        os.close(lock)
        _gone(spool)


def test_tidy_leaves_a_folder_that_is_not_the_controllers_own(tmp_path):
    spool = spool_for(tmp_path)
    os.mkdir(spool, 0o777)
    os.chmod(spool, 0o777)  # as another user's would be to this one
    _run_files(spool, 1, 1, "exit")
    try:
        assert not tidy(spool, lambda job_id, run: False) and os.listdir(spool) == ["job1.run1.exit"]
    finally:
        _gone(spool)


def test_a_name_file_that_is_not_a_file_is_refused_naming_it(tmp_path):
    """Regression (review): a folder in its place made the start fail with a traceback."""
    import pytest

    from vipu.errors import InvalidArgument

    (tmp_path / NAME_FILE).mkdir()
    with pytest.raises(InvalidArgument, match=f"{tmp_path / NAME_FILE} is not a file the controller made"):
        spool_for(tmp_path)


def _plane(state):
    return open_plane("bow-pod16", state, "127.0.0.1", 8090, kill_wait_s=1)


def _stop(plane) -> None:
    plane.stop()
    plane.store.close()


def test_a_controller_that_ran_no_program_makes_no_spool_and_a_clean_stop_removes_its_own(tmp_path):
    """Regression: every controller made its spool as it started and left it empty in /tmp when it was gone without
    a clean stop (a thousand from the test suite alone)."""
    plane = _plane(tmp_path / "state")
    spool = plane.runners["command"].spool
    try:
        assert not os.path.lexists(spool)
        job = submit(plane, tmp_path, "#!/bin/sh\nexit 0\n")
        step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL)
        assert os.path.isdir(spool)
    finally:
        _stop(plane)
    assert not os.path.lexists(spool)


def test_a_stop_keeps_the_spool_for_the_end_a_restart_reads_and_the_restarts_stop_removes_it(tmp_path):
    plane = _plane(tmp_path / "state")
    spool = plane.runners["command"].spool
    try:
        job = submit(plane, tmp_path, "#!/bin/sh\ntouch started\nexec sleep 60\n", requeue=False)
        step_until(plane, lambda: (tmp_path / "started").exists())
    finally:
        _stop(plane)  # the program stopped with the controller: its end is the restart's to record
    assert os.listdir(spool) == [f"job{job}.run1.exit"]
    restarted = _plane(tmp_path / "state")
    try:
        assert restarted.runners["command"].spool == spool
        ended = restarted.scheduler.job(job)
        assert (ended.state, ended.exit_signal) == (JobState.NODE_FAIL, 15)  # as its supervisor recorded it
    finally:
        _stop(restarted)
    assert not os.path.lexists(spool)


def test_a_state_folder_thrown_away_takes_its_own_spool_with_it(tmp_path):
    """A test's or the demo's controller, stopped while a program ran: its exit record waits for a restart that will
    never come, once its state folder is thrown away."""
    spool = spool_for(tmp_path)
    os.mkdir(spool, 0o711)
    _run_files(spool, 1, 1, "exit")
    assert discard(tmp_path) and not os.path.lexists(spool)
    os.mkdir(spool, 0o777)
    os.chmod(spool, 0o777)  # not its own: kept_spool names none, and it stays
    _run_files(spool, 1, 1, "exit")
    try:
        assert discard(tmp_path) and os.listdir(spool) == ["job1.run1.exit"]
    finally:
        _gone(spool)
