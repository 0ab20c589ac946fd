"""What a supervisor records of its program's end (run_exits.py), and what a restart reads of it."""

from __future__ import annotations

from vipu.jobs.programs.run_exits import exit_path, forget_exits, record_exit, recorded_exit


def test_an_end_recorded_is_read_back_whole(tmp_path):
    path = exit_path(tmp_path, 7, 2)
    record_exit(path, 3, 0, 1234.5)
    assert recorded_exit(path) == {"exit_code": 3, "signal": 0, "at": 1234.5}
    assert [p.name for p in tmp_path.iterdir()] == ["job7.run2.exit"]  # (no half-written file left beside it)


def test_no_file_or_one_no_supervisor_finished_reads_as_nothing_recorded(tmp_path):
    path = exit_path(tmp_path, 7, 2)
    assert recorded_exit(path) is None
    for text in ("", '{"exit_code": 3', '{"exit_code": 3, "signal": 0}', '{"exit_code": "x", "signal": 0, "at": 1}'):
        path.write_text(text)
        assert recorded_exit(path) is None, text


def test_values_no_supervisor_writes_read_as_nothing_recorded(tmp_path):
    """Regression: a damaged record with "at": NaN was taken as the run's end, stored, and the next start refused
    the job's record; a restart now ends such a run at the restart, as with no record."""
    path = exit_path(tmp_path, 7, 2)
    for text in ('{"exit_code": 0, "signal": 0, "at": NaN}', '{"exit_code": 0, "signal": 0, "at": Infinity}',
                 '{"exit_code": 0, "signal": 0, "at": 1e999}', '{"exit_code": 1e23, "signal": 0, "at": 1}',
                 '{"exit_code": 256, "signal": 0, "at": 1}', '{"exit_code": -1, "signal": 0, "at": 1}',
                 '{"exit_code": 0, "signal": 99, "at": 1}', '{"exit_code": 0, "signal": -9, "at": 1}'):
        path.write_text(text)
        assert recorded_exit(path) is None, text
    path.write_text('{"exit_code": 255, "signal": 9, "at": 1}')
    assert recorded_exit(path) == {"exit_code": 255, "signal": 9, "at": 1.0}


def test_a_record_nested_too_deep_to_parse_reads_as_nothing_recorded(tmp_path):
    """Regression: a record of nested brackets raised RecursionError out of json.loads, which a restart's recovery
    did not catch: the controller could not start."""
    path = exit_path(tmp_path, 7, 2)
    path.write_text("[" * 4096)
    assert recorded_exit(path) is None


def test_forgetting_a_job_removes_only_its_records(tmp_path):
    for job, run in ((7, 1), (7, 2), (17, 1)):
        record_exit(exit_path(tmp_path, job, run), 0, 0, 1.0)
    forget_exits(tmp_path, 7)
    assert [p.name for p in tmp_path.iterdir()] == ["job17.run1.exit"]
