"""Stored records checked for consistency at start (issue 23): a record that contradicts its name, its partition or
the Pod stops the start naming it and the fix, instead of loading as something it is not."""

from __future__ import annotations

import json
import sqlite3

import pytest

from vipu.control.startup import open_plane
from vipu.access import ANYONE
from vipu.errors import InvalidArgument, NotFound
from vipu.scheduler.job_states import JobState

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
        f" `sqlite3 {state / 'vipu.sqlite3'} 'PRAGMA user_version = 4'` (this version's; 0 for a state from before"
        " the numbering)")


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
        plane.jobs.job(3, ANYONE)
    assert missing.value.message == (
        f"job 3 is in neither the queue nor the job history: its record was lost (a repairing start may have moved it"
        f" aside under another name: `sqlite3 {tmp_path / 'vipu.sqlite3'} 'SELECT kind, name, error FROM quarantine'`"
        " lists them)")
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
