"""The highest job id a controller handed out, from its log (text, JSON, behind journalctl's prefix) and from its
database: an array's one `submitted` line counts every task's id."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from vipu.access import ANYONE
from vipu.control.ids_given import highest_given, highest_logged
from vipu.control.job_ops import SubmitRequest
from vipu.control.startup import DATABASE


@pytest.mark.parametrize("line, highest", [
    ("2026-11-29 09:00:00,000 INFO vipu.events: job 5017 of root submitted (4 IPUs), by root", 5017),
    ('{"message": "job 5018_3 of root submitted (1 IPU, held), by root", "event": "job_submitted"}', 5018),
    ('Nov 29 09:00:02 head vipu-server[77]: {"message": "jobs 5019_[0-4999] of root submitted (1 IPU), by root"}',
     10018),
    ("... jobs 30_[0-3,7,9-10] of bob submitted (1 IPU), by bob", 36),
    ("... jobs 40_[0-4000000:1000] of bob submitted (1 IPU), by bob", 4040),
    ("... job 12000 of root cancelled, by root", None),  # not a submit: its id was given by a line before
])
def test_a_logs_submitted_lines_give_the_ids_their_jobs_took(line, highest):
    assert highest_logged([line]) == highest


def test_a_database_and_the_log_give_the_highest_id_handed_out(plane, tmp_path):
    plane.jobs.submit([SubmitRequest({"ipus": 1, "time_limit": "1m", "hold": True, "array": "0-9"}, {})], ANYONE)
    plane.jobs.submit([SubmitRequest({"ipus": 1, "time_limit": "1m", "hold": True}, {})], ANYONE)
    assert highest_given(plane.settings.state_dir / DATABASE) == 11
    log = tmp_path / "vipu.log"
    log.write_text("... jobs 1_[0-9] of root submitted (1 IPU, held), by root\n")
    assert highest_given(log) == 10


def test_a_damaged_next_id_is_a_value_error_the_command_names_not_a_crash(tmp_path):
    path = tmp_path / DATABASE
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE records (kind TEXT, name TEXT, doc TEXT)")
        db.execute("INSERT INTO records VALUES ('scheduler_meta', 'scheduler', '{\"next_job_id\": null}')")
    with pytest.raises(ValueError, match="next_job_id"):  # (vipu-admin last-job-id: `cannot read it (...)`)
        highest_given(path)
