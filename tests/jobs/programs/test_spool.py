"""The controller's spool folder (spool.py): a name no other user can work out, kept across restarts, and a new one
when a folder of that name is not the controller's own."""

from __future__ import annotations

import os
import shutil
import stat

from vipu.jobs.programs import spool as spools
from vipu.jobs.programs.spool import NAME_FILE, spool_for


def _gone(*folders: str) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_spool_has_a_random_name_made_at_start_and_found_again_by_a_restart(tmp_path):
    first = spool_for(tmp_path)
    try:
        assert (tmp_path / NAME_FILE).read_text() == first + "\n"
        assert stat.S_IMODE(os.stat(first).st_mode) == 0o711 and os.stat(first).st_uid == os.geteuid()
        assert spool_for(tmp_path) == first  # a restart: the same folder, with what its supervisors left
        other = tmp_path / "other"
        other.mkdir()
        assert spool_for(other) not in (first, spools._before(tmp_path))  # not worked out from the state's path
    finally:
        _gone(first, spool_for(other))


def test_a_spool_that_is_not_the_controllers_own_gets_a_new_name(tmp_path):
    """Regression: the name was a digest of the state folder's path, so any user could make it first in a fresh /tmp
    and every program failed to start."""
    first = spool_for(tmp_path)
    os.chmod(first, 0o777)  # as a folder another user made would be to this one: not its own
    second = spool_for(tmp_path)
    try:
        assert second != first and (tmp_path / NAME_FILE).read_text() == second + "\n"
        os.rmdir(first)
        os.symlink(second, first)  # a link is not its own either
        (tmp_path / NAME_FILE).write_text(first + "\n")
        assert spool_for(tmp_path) not in (first, second)
    finally:
        os.unlink(first)
        _gone(second, spool_for(tmp_path))


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


def test_a_spool_another_user_makes_between_the_look_and_the_mkdir_gets_a_new_name(tmp_path, monkeypatch):
    """Regression: a folder of the chosen name made after spool_for found it missing, but before its own mkdir,
    was taken as the controller's (FileExistsError ignored), and every program's start then refused it."""
    real, squatted = os.mkdir, []

    def another_user_first(path, mode=0o777, **kw):
        if not squatted and os.path.basename(path).startswith("vipu-spool-"):
            squatted.append(path)
            real(path)
            os.chmod(path, 0o777)  # as a folder another user made would be to this one: not its own
        return real(path, mode, **kw)

    monkeypatch.setattr(os, "mkdir", another_user_first)
    spool = spool_for(tmp_path)
    monkeypatch.undo()
    try:
        assert spool != squatted[0] and spools.is_own(spool)
        assert (tmp_path / NAME_FILE).read_text() == spool + "\n"
    finally:
        _gone(spool, *squatted)


def test_a_name_file_that_is_not_a_file_is_refused_naming_it(tmp_path):
    """Regression (review): a folder in its place made the start fail with a traceback."""
    import pytest

    from vipu.errors import InvalidArgument

    (tmp_path / NAME_FILE).mkdir()
    with pytest.raises(InvalidArgument, match=f"{tmp_path / NAME_FILE} is not a file the controller made"):
        spool_for(tmp_path)
