"""A program's output file as its supervisor opens it (stepd.open_output): without --secure, as the controller's own
user, never through a symlink and never over a file that appeared after the controller's check."""

from __future__ import annotations

import os

import pytest

from vipu.jobs.programs.stepd import StartError, open_output


def test_a_file_that_appeared_after_the_check_is_not_written_over(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("someone's\n")  # made between the controller's check and the open
    with pytest.raises(StartError, match=f"output file {path} appeared as the run started .* remove it, or give"
                                         " --output a new file"):
        open_output(str(path), "output", [str(path)])
    assert path.read_text() == "someone's\n"


def test_a_symlink_is_not_followed_even_to_a_file_of_the_jobs_earlier_run(tmp_path):
    target, link = tmp_path / "target", tmp_path / "out.txt"
    target.write_text("keep\n")
    link.symlink_to(target)
    with pytest.raises(StartError, match="appeared as the run started"):
        open_output(str(link), "output", [])  # not fresh: its earlier run made out.txt, since swapped for a link
    assert target.read_text() == "keep\n"


def test_under_secure_the_users_account_decides(tmp_path):
    target, link = tmp_path / "target", tmp_path / "out.txt"
    link.symlink_to(target)
    os.close(open_output(str(link), "error", None))  # its own link, its own permissions
    assert target.exists()
