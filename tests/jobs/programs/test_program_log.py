"""`vipu logs -f` of a program, read in the controller's process (program_log.py): a requeued job's follower reads
on where the run it followed stopped when the runs share one file (--open-mode append)."""

from __future__ import annotations

import os

import pytest

import vipu.jobs.programs.command_spec  # noqa: F401 - registers the command workload with JobSpec
from tests.server.test_training_logs import step_until
from vipu.access import Identity
from vipu.control.startup import open_plane
from vipu.jobs.programs.spool import discard
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import TERMINAL

ROOT = Identity("root", admin=True)


@pytest.fixture
def plane(tmp_path):
    plane = open_plane("bow-pod16", tmp_path / "state", "127.0.0.1", 8090, kill_wait_s=1)
    yield plane
    plane.stop()
    plane.store.close()
    discard(tmp_path / "state")


def submit(plane, home, script: str, workload: dict | None = None, **fields) -> int:
    spec = parse_spec({"name": "p", "ipus": 4, "time_limit": "2m", **fields, "workload": {
        "kind": "command", "script": script, "submit_dir": str(home), "environment": {"PATH": os.environ["PATH"]},
        **(workload or {})}})
    with plane.lock:
        [job] = plane.scheduler.submit(spec, plane.now())
    return job.id


def follow(plane, job: int, mark=None):
    logs = plane.job_views.logs(job, ROOT, follow=True, after=mark)
    return logs.job.state in TERMINAL, logs.lines, logs.mark


def test_a_requeued_jobs_follower_reads_on_where_it_was_in_a_file_the_runs_share(plane, tmp_path):
    """Regression: with --open-mode append the next run adds to the file the follower read; it was read from its
    start again, so every line of the run before came twice."""
    job = submit(plane, tmp_path, "#!/bin/sh\necho run $SLURM_RESTART_COUNT\n", output=str(tmp_path / "out"),
                 workload={"open_mode": "append"})
    step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL)
    _, lines, mark = follow(plane, job)
    assert lines == ["run 0"]
    plane.jobs.requeue([job], False, ROOT)
    step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL and (tmp_path / "out").read_text().count(
        "\n") == 2)
    _, lines, _ = follow(plane, job, mark)
    assert lines == [f"(run 2 of job {job} started)", "run 1"]


def test_a_partial_follow_shows_a_line_not_ended_yet_and_ends_it_before_a_line_of_its_own(plane, tmp_path):
    """Text `vipu logs -f` shows a line as far as the program has written it (tail -f); the next run's notice, which
    is not the rest of that line, starts one of its own."""
    job = submit(plane, tmp_path, "#!/bin/sh\nprintf 'run %s' $SLURM_RESTART_COUNT\n", output=str(tmp_path / "out"))
    step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL)
    logs = plane.job_views.logs(job, ROOT, follow=True, partial=True)
    assert (logs.lines, logs.mark.mid_line) == (["run 0"], True)
    again = plane.job_views.logs(job, ROOT, follow=True, after=logs.mark, partial=True)
    assert (again.lines, again.mark.mid_line, again.mark.closed) == ([], True, True)  # nothing came: still open
    plane.jobs.requeue([job], False, ROOT)
    step_until(plane, lambda: plane.scheduler.job(job).state in TERMINAL and (tmp_path / "out").read_text() == "run 1")
    logs = plane.job_views.logs(job, ROOT, follow=True, after=again.mark, partial=True)
    assert (logs.lines, logs.mark.mid_line) == (["", f"(run 2 of job {job} started)", "run 1"], True)
    whole = plane.job_views.logs(job, ROOT, follow=True, after=again.mark)  # --json: whole lines, none open
    assert (whole.lines, whole.mark.mid_line) == ([f"(run 2 of job {job} started)", "run 1"], False)
