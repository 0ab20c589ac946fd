"""Stored records checked for consistency at start (issue 23): a record that contradicts its name, its partition or
the Pod stops the start naming it and the fix, instead of loading as something it is not."""

from __future__ import annotations

import json
import sqlite3

import pytest

from vipu.control.startup import open_plane
from vipu.access import ANYONE
from vipu.errors import InvalidArgument, NotFound
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job_states import JobState
from vipu.store_schema import SCHEMA_VERSION

SLEEP = {"name": "s", "ipus": 1, "time_limit": "1h", "workload": {"kind": "sleep", "duration": "1000s"}}
HELD = {"name": "h", "ipus": 1, "time_limit": "1h", "hold": True}
FIX = "; start once with --quarantine-bad-records to move them into its quarantine table"


@pytest.fixture
def state(tmp_path):
    """A state folder holding job 1 RUNNING on partition slurm_1 and job 2 held, as a SIGKILL leaves it."""
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    with plane.lock:
        plane.scheduler.submit(SLEEP, plane.now())
        plane.scheduler.submit(HELD, plane.now())
    plane.step()
    assert plane.scheduler.job(1).state is JobState.RUNNING
    plane.store.close()
    return tmp_path


def edit(state, sql: str, *args) -> None:
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        db.execute(sql, args)


def doc(state, kind: str, name: str) -> dict:
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        return json.loads(db.execute("SELECT doc FROM records WHERE kind = ? AND name = ?", (kind, name)).fetchone()[0])


def put(state, kind: str, name: str, record: dict) -> None:
    edit(state, "INSERT OR REPLACE INTO records (kind, name, doc) VALUES (?, ?, ?)", kind, name, json.dumps(record))


def refusal(state) -> str:
    with pytest.raises(InvalidArgument) as refused:
        open_plane("bow-pod16", state, "127.0.0.1", 0)
    return str(refused.value)


def test_a_job_record_under_another_jobs_id_is_refused_and_moved_aside_by_name(state):
    """Regression: record 2 holding job 1's id loaded as a second job 1, and job 2 vanished without a word."""
    put(state, "job", "2", doc(state, "job", "1"))
    assert f"cannot serve: job 2: is stored under the name 2 but its id is 1{FIX}" in refusal(state)
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    assert sorted(plane.scheduler.table.jobs) == [1] and 2 in plane.scheduler.table.quarantined
    plane.store.close()


def test_a_negative_job_id_is_refused(state):
    """Regression: job -5 loaded, was listed, and no command could address it."""
    put(state, "job", "-5", {**doc(state, "job", "2"), "id": -5})
    assert f"cannot serve: job -5: has the id -5; job ids start at 1{FIX}" in refusal(state)
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    assert sorted(plane.scheduler.table.jobs) == [1, 2]
    plane.store.close()


def test_a_partition_held_by_a_pending_job_not_its_own_is_refused(state):
    """Regression: it loaded without a word, held by a job that runs nowhere."""
    put(state, "partition", "slurm_1", {**doc(state, "partition", "slurm_1"), "holder": "job 2"})
    assert (f"cannot serve: partition slurm_1: is held by job 2, which is PENDING, but a job holds only its own"
            f" partition (slurm_2){FIX}") in refusal(state)


def test_a_pending_jobs_own_partition_is_released_at_start_as_a_stopped_run_leaves_it(state):
    """Not a contradiction: a stopped program keeps its job's partition until it has ended (Slurm's COMPLETING),
    while the job is already back in the queue; a kill -9 meanwhile leaves both, and the start releases it."""
    job = doc(state, "job", "1")
    put(state, "job", "1", {**job, "state": "PENDING", "start_time": None, "first_ipu": None})
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    assert "slurm_1" not in plane.controller.state.partitions
    plane.store.close()


@pytest.mark.parametrize("change,why", [
    ({"partition": "slurm_2"}, "is RUNNING on partition slurm_2, but a job runs on its own (slurm_1)"),
    ({"first_ipu": 4}, "is RUNNING from IPU 4, but its partition slurm_1 is held by job 1 from IPU 0"),
])
def test_a_running_job_whose_partition_record_is_not_its_run_is_refused_not_said_to_survive(state, change, why):
    """Regression: the start logged "resumed: its partition survived" for a partition that was not the job's."""
    put(state, "job", "1", {**doc(state, "job", "1"), **change})
    assert f"cannot serve: job 1: {why}{FIX}" in refusal(state)


def test_a_schema_version_below_zero_is_refused_naming_the_fix(state):
    edit(state, "PRAGMA user_version = -1")
    assert refusal(state) == (
        f"the state database {state / 'vipu.sqlite3'} has schema version -1, which no vipu-sim writes (PRAGMA"
        " user_version changed by hand, or damaged); restore it from a backup, or set the version that wrote it with"
        f" `sqlite3 {state / 'vipu.sqlite3'} 'PRAGMA user_version = {SCHEMA_VERSION}'` (this version's; 0 for a state"
        " from before the numbering)")


def test_records_of_another_pod_with_the_pod_record_gone_name_the_pod_not_quarantine(tmp_path):
    """Regression: the refusal advised --quarantine-bad-records, which would have dropped its machines' agents and
    its partitions; and the refused start stored the wrong Pod, so the right one was then refused too."""
    plane = open_plane("bow-pod64", tmp_path, "127.0.0.1", 0)
    plane.store.close()
    edit(tmp_path, "DELETE FROM meta WHERE key = 'pod'")
    with pytest.raises(InvalidArgument) as refused:
        open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    assert str(refused.value).startswith(
        f"the state database {tmp_path / 'vipu.sqlite3'} does not say which Pod it was made on, and 12 of its records"
        " do not fit --pod bow-pod16 (agent ag04 is the agent of machine 4, outside this Pod's 0-3;")
    assert str(refused.value).endswith(": start with the --pod it was made on (bow-pod64 fits its records); moving"
                                       " the records aside would drop its machines and partitions")
    open_plane("bow-pod64", tmp_path, "127.0.0.1", 0).store.close()


def test_a_folder_holding_only_the_generation_marker_is_not_a_fresh_start_without_a_word(tmp_path):
    """Regression: the marker shows a controller had a database open here, yet an empty one was served."""
    (tmp_path / "vipu.generation").write_text("7\n")
    with pytest.raises(InvalidArgument, match=r"vipu.sqlite3 is missing, but this folder held a controller's state"
                                              r" \(it holds vipu.generation\): restore the database .* or start with"
                                              " --accept-empty-state"):
        open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    assert (tmp_path / "vipu.generation").read_text() == "7\n"  # the refusal leaves it: the next start refuses too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vipu.generation"]  # and makes nothing
    open_plane("bow-pod16", tmp_path, "127.0.0.1", 0, accept_empty=True).store.close()


def test_show_job_of_an_id_in_no_record_says_it_was_lost_not_that_the_history_has_it(tmp_path):
    """Regression: job 3, stored as id -5 and moved aside by a repairing start, was said to have "ended and left the
    queue (min_job_age); `vipu history -j 3` shows it", which it did not."""
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    for _ in range(3):
        plane.scheduler.submit({"ipus": 1, "time_limit": "1h", "hold": True}, 0.0)
    plane.store.close()
    edit(tmp_path, "UPDATE records SET name = '-5', doc = json_set(doc, '$.id', -5) WHERE kind = 'job' AND name = '3'")
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 0, quarantine=True)
    with pytest.raises(NotFound) as missing:
        plane.job_views.job(3, ANYONE)
    assert missing.value.message == (
        "job 3 is in neither the queue nor the job history: its record was lost before a start (with a damaged page, or"
        f" moved aside under another name: `sqlite3 {tmp_path / 'vipu.sqlite3'} 'SELECT kind, name, error FROM"
        " quarantine'` lists them); the log of that start names it")
    plane.store.close()


def test_a_dropped_quarantine_table_is_made_again_and_the_queue_served(state, caplog):
    """Regression: the start failed with exit 5, "free space", on a sound disk."""
    edit(state, "DROP TABLE quarantine")
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    assert plane.scheduler.job(2).state is JobState.PENDING
    assert plane.store.quarantined(("job",)) == []
    plane.store.close()
    assert "had no quarantine table: made again, empty" in caplog.text


@pytest.mark.parametrize("table", ["records", "meta"])
def test_a_dropped_live_table_is_named_not_sent_to_a_dump_that_cannot_bring_it_back(state, table):
    """Regression: a dropped records table named the .dump command, whose copy the next start refused the same way."""
    edit(state, f"DROP TABLE {table}")
    said = refusal(state)
    assert said == (f"the state database {state / 'vipu.sqlite3'} has no {table} table (dropped, or lost with its"
                    " pages): what it held is gone, and copying the database cannot bring it back; restore it from a"
                    " backup, or start with --accept-empty-state to make it again, empty, and serve what is left")
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, accept_empty=True)  # the operator's consent
    plane.store.close()
    open_plane("bow-pod16", state, "127.0.0.1", 0).store.close()  # and the next start is a plain one


def test_job_ids_in_no_table_are_named_at_start_once_and_by_show_job(tmp_path, caplog):
    """Regression: after the .dump the refusal of a damaged database names, the jobs of the lost page were gone from
    the queue, and the start said nothing."""
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    for _ in range(12):
        plane.scheduler.submit(HELD, plane.now())
    plane.store.close()
    edit(tmp_path, "DELETE FROM records WHERE kind = 'job' AND CAST(name AS INTEGER) IN (3, 4, 5, 6, 9)")
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 0)
    assert sorted(plane.scheduler.table.jobs) == [1, 2, 7, 8, 10, 11, 12]
    [said] = [r.getMessage() for r in caplog.records if "none of the tables" in r.getMessage()]
    assert said == (f"5 job id(s) below the next one (13) are in none of the tables of {tmp_path / 'vipu.sqlite3'}:"
                    " their records were lost (with a damaged page or in a copy of a damaged database) or moved aside"
                    " under another name: 3-6,9; the quarantine table lists them, and they are not given again")
    with pytest.raises(NotFound) as missing:
        plane.job_views.job(4, ANYONE)
    assert missing.value.message.startswith("job 4 is in neither the queue nor the job history: its record was lost"
                                            " before a start")
    assert plane.scheduler.submit(HELD, plane.now())[0].id == 13
    plane.store.close()
    caplog.clear()
    open_plane("bow-pod16", tmp_path, "127.0.0.1", 0).store.close()
    assert "none of the tables" not in caplog.text  # said once: the quarantine table lists them now


def test_a_dropped_job_history_is_named_with_the_flag_that_makes_it_again_empty(state, caplog):
    """Regression: it was refused as "damaged pages in its job history", and the named repair could not rebuild it;
    moving the database away dropped the live queue too."""
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, config=SchedulerConfig(min_job_age=1))
    [job] = plane.scheduler.submit(HELD, plane.now())
    plane.scheduler.cancel([job.id], plane.now())
    assert [j.id for j in plane.scheduler.purge(plane.now() + 10)] == [3]
    plane.store.close()
    edit(state, "DROP TABLE job_history")
    assert refusal(state) == (
        f"the state database {state / 'vipu.sqlite3'} has no job_history table (dropped, or lost with its pages): what"
        " it held is gone, and copying the database cannot bring it back; restore it from a backup, or start with"
        " --accept-empty-state to make it again, empty, and serve what is left")
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, accept_empty=True)  # the operator's consent
    assert plane.scheduler.job(1).state is JobState.RUNNING and plane.scheduler.job(2).state is JobState.PENDING
    assert plane.store.history_keys() == [] and plane.store.damaged_tables() == []
    assert "had no job_history table: made again, empty" in caplog.text
    assert "below the next one (4) are in none of the tables" in caplog.text and "another name: 3; the quarantine" in caplog.text
    assert plane.scheduler.submit(HELD, plane.now())[0].id == 4  # ids go on
    plane.store.close()
    open_plane("bow-pod16", state, "127.0.0.1", 0).store.close()  # and the next start is a plain one
