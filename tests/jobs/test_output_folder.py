"""The folders a job's output may be written under (vipu/jobs/output_folder.py)."""

from __future__ import annotations

from vipu.jobs.output_folder import allowed_folders, outside_folders


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
