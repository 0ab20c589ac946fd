"""The folders a job's output may be written under (vipu/jobs/output_folder.py)."""

from __future__ import annotations

import os

import pytest

from vipu.jobs.output_folder import (OutputRefused, allowed_folders, fresh_files, marked_for, outside_folders,
                                     writer_mark)


def test_a_job_output_folder_swapped_for_a_symlink_is_no_longer_allowed(tmp_path):
    """Regression: the check resolves each allowed folder's links, so a linked STATE/job-output made wherever it
    pointed a folder the controller wrote users' output into."""
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    (state / "job-output").mkdir(parents=True)
    elsewhere.mkdir()
    assert allowed_folders(None, state, ()) == [state / "job-output"]
    assert outside_folders("output", str(state / "job-output" / "x.txt"), allowed_folders(None, state, ())) is None
    (state / "job-output").rmdir()
    (state / "job-output").symlink_to(elsewhere)
    assert allowed_folders(None, state, ()) == []
    assert outside_folders("output", str(state / "job-output" / "x.txt"), allowed_folders(None, state, ())) == (
        f"output file {state / 'job-output' / 'x.txt'} is outside the folders this controller writes job output into"
        " (none): give --output a path under one of them (a relative path is under where vipu submit runs), or ask"
        " the operator for a vipu-server --output-dir")


def made_by_a_run(path, mark: str) -> None:
    """A program's file as its supervisor makes it for a run (new, marked), written and closed."""
    from vipu.jobs.programs.stepd import open_output

    fd = open_output(str(path), "output", [str(path)], mark=mark)
    os.write(fd, b"run1\n")
    os.close(fd)


def test_a_rerun_writes_over_its_users_earlier_file_and_nothing_else(tmp_path):
    """Regression (newcomer walk): `vipu submit -o same.out` twice FAILED the second job ("exists and was not written
    by this controller for job 77"); sbatch truncates the file. Another user's job, or a file the controller did not
    make, stays refused."""
    state, home = tmp_path / "state", tmp_path / "home"
    state.mkdir()
    home.mkdir()
    same = home / "same.out"
    alice, bob = writer_mark(state, "alice"), writer_mark(state, "bob")
    made_by_a_run(same, alice)
    assert fresh_files({"output": str(same)}, [home], "77", [], mark=alice) == []  # exists: opened, truncated
    refused = f"output file {same} exists and was not written by this controller for job 78 or an earlier job of"
    with pytest.raises(OutputRefused, match=refused):
        fresh_files({"output": str(same)}, [home], "78", [], mark=bob)
    with pytest.raises(OutputRefused, match="was not written by this controller"):  # another controller's state
        fresh_files({"output": str(same)}, [home], "77", [], mark=writer_mark(tmp_path, "alice"))

    precious = home / "precious.txt"
    precious.write_text("the controller's user's own\n")
    with pytest.raises(OutputRefused, match=f"output file {precious} exists and was not written"):
        fresh_files({"output": str(precious)}, [home], "77", [], mark=alice)
    same.unlink()
    same.write_text("made again at its path\n")  # not the file the run made, whatever its inode
    with pytest.raises(OutputRefused):
        fresh_files({"error": str(same)}, [home], "77", [], mark=alice)


def test_a_file_opened_as_the_jobs_user_or_already_there_is_not_marked(tmp_path):
    from vipu.jobs.programs.stepd import open_output

    mark = writer_mark(tmp_path, "alice")
    made_by_a_run(tmp_path / "new.out", mark)
    assert marked_for(tmp_path / "new.out", mark)
    for name, fresh in (("secure.out", None), ("there.out", [])):  # --secure; a file its earlier run made
        (tmp_path / name).write_text("")
        os.close(open_output(str(tmp_path / name), "output", fresh, mark=mark))
        assert not marked_for(tmp_path / name, mark)
