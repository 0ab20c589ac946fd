"""The job history's table: a damaged page is found at start and refused naming the fix (which rebuilds around it),
a move into it that fails fails alone, and a job's runner records move with it."""

from __future__ import annotations

import os
import sqlite3

import pytest

from tests.cli.test_jobs_e2e import wait_for
from vipu.control.startup import open_plane
from vipu.errors import InvalidArgument, NotFound, Unavailable
from vipu.jobs.train.runs import JobResult
from vipu.scheduler.job_record import HISTORY_KIND, Job
from vipu.scheduler.job_states import JobState
from vipu.store import HistoryUnwritable, Store

JOBS = 300  # enough rows for the table to span many pages


def ended_job(plane, job_id: int) -> Job:
    (job,) = plane.scheduler.submit({"name": "done", "ipus": 1, "time_limit": "1h", "hold": True}, 0.0)
    return job.moved(JobState.CANCELLED, 0.0, end_time=0.0).updated({"id": job_id})


def state_with_history(state) -> Job:
    """A state folder whose history holds jobs 1..JOBS; returns one such job, to make more from."""
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    job = ended_job(plane, 1)
    plane.store.commit([(HISTORY_KIND, str(i), job.updated({"id": i})) for i in range(1, JOBS + 1)], [])
    plane.store.close()
    return job


def damage_last_page(path, of: str = "job_history") -> None:
    """Random bytes over the last leaf page of the history table (the one a new, higher id goes into), or of `of`."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the page in the database file, not a newer copy in the -wal
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (page,) = db.execute("SELECT max(pageno) FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (of,)).fetchone()
    with open(path, "r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(os.urandom(page_size))


def test_a_damaged_history_page_is_refused_at_start_and_the_named_fix_rebuilds_around_it(tmp_path):
    """Regression: the damage went unseen until the first purge, which then failed every write grouped with it."""
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    path = state / "vipu.sqlite3"
    damage_last_page(path)
    with pytest.raises(InvalidArgument) as refused:
        open_plane("bow-pod16", state, "127.0.0.1", 0)
    assert str(refused.value).startswith(f"the state database {path} has damaged pages in its job history (table"
                                         " job_history: ")
    assert "start once with --quarantine-bad-records to rebuild the database" in str(refused.value)
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    kept = {i for _, i in plane.store.history_keys()}
    lost = {int(n) for (n,) in plane.store._db.execute("SELECT name FROM quarantine WHERE kind = 'job_history'")}
    assert lost and kept | lost == set(range(1, JOBS + 1)) and not kept & lost
    assert plane.store.damaged_tables() == []
    assert path.stat().st_mode & 0o777 == 0o600
    assert len([p for p in state.glob("vipu.sqlite3.damaged-*") if p.name[-1].isdigit()]) == 1  # kept aside
    plane.store.close()


def test_a_failing_history_move_fails_alone_and_the_queue_keeps_writing(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    job = state_with_history(state)
    store = Store(state / "vipu.sqlite3")
    damage_last_page(store.path)
    with store.batch():
        store.commit([("job", "900", job.updated({"id": 900}))], [])  # queued before the move: written first
        with pytest.raises(HistoryUnwritable, match="ended jobs stay in memory and the queue goes on"):
            store.commit([(HISTORY_KIND, str(JOBS + 1), job.updated({"id": JOBS + 1}))], [("job", "901")])
        store.commit([("job", "902", job.updated({"id": 902}))], [])
    store.flush()
    assert store.writable
    rows = {n for (n,) in store._db.execute("SELECT name FROM records WHERE kind = 'job'")}
    assert {"900", "902"} <= rows
    with pytest.raises(Unavailable, match="cannot be read .*restart the controller: its start checks the history"):
        store.history_docs([JOBS])  # a read of the damaged page: UNAVAILABLE, not INTERNAL


def test_a_jobs_runner_records_move_with_it_into_the_history(tmp_path):
    """Regression: job_result and program_run records stayed in the live records for ever."""
    state = tmp_path / "state"
    state.mkdir()
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    assert plane.store.job_kinds == {"job_result", "program_run"}
    job = ended_job(plane, 7)
    result = JobResult(name="7", run=1)
    plane.store.commit([("job", "7", job), ("job_result", "7", result)], [])
    plane.store.commit([(HISTORY_KIND, "7", job)], [("job", "7")])
    assert plane.store._db.execute("SELECT count(*) FROM records WHERE name = '7'").fetchone() == (0,)
    assert plane.store.get("job_result", "7", JobResult) == result
    plane.store.close()


def test_an_ended_job_without_an_end_time_is_refused_at_start_and_can_be_moved_aside(tmp_path):
    """Regression: a COMPLETED record without an end time loaded without a word and was never purged."""
    state = tmp_path / "state"
    state.mkdir()
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    (kept,) = plane.scheduler.submit({"name": "kept", "ipus": 1, "time_limit": "1h", "hold": True}, 0.0)
    (job,) = plane.scheduler.submit({"name": "odd", "ipus": 1, "time_limit": "1h", "hold": True}, 0.0)
    odd = job.updated({"state": JobState.COMPLETED, "first_ipu": 0})  # as a damaged or hand-edited record
    plane.store.commit([("job", str(odd.id), odd)], [])
    plane.store.close()
    with pytest.raises(InvalidArgument, match=f"has 1 record\\(s\\) it cannot serve: job {odd.id}: is COMPLETED but"
                                              " has no end time; start once with --quarantine-bad-records"):
        open_plane("bow-pod16", state, "127.0.0.1", 0)
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    assert sorted(plane.scheduler.table.jobs) == [kept.id]
    assert odd.id in plane.scheduler.table.quarantined
    plane.store.close()


def test_a_failing_move_is_logged_and_retried_later_while_the_queue_goes_on(tmp_path, caplog):
    state = tmp_path / "state"
    state.mkdir()
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    calls = []

    def failing(now):
        calls.append(now)
        raise HistoryUnwritable("the job history of x cannot be written (database disk image is malformed)")

    plane.scheduler.purge = failing
    with caplog.at_level("WARNING", logger="vipu.loop"):
        with plane.lock:
            plane.loop._purge(1.0)
            plane.loop._purge(2.0)  # within the retry time: not tried
    assert calls == [1.0] and "malformed" in plane.loop.purge_failing
    assert plane.metrics.history_move_failures._value.get() == 1  # vipu_history_move_failures_total
    assert "ended jobs could not move to the job history, retried in 60 s: the job history of x" in caplog.text
    with plane.lock:
        (job,) = plane.scheduler.submit({"name": "after", "ipus": 1, "time_limit": "1h", "hold": True}, 3.0)
    assert plane.store.get("job", str(job.id), Job) is not None  # the queue's writes go on
    plane.store.close()


def test_runner_records_left_behind_by_earlier_purges_move_on_upgrade(tmp_path):
    """Regression: a state purged by the previous version kept its jobs' results in the live records."""
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 0")
    store = Store(path)
    store._db.execute("PRAGMA user_version = 3")
    store._db.execute("DROP TABLE job_history_records")
    store._db.execute("INSERT INTO job_history (id, user, state, ended, doc) VALUES (5, 'u', 'COMPLETED', 0, '{}')")
    store._db.executemany("INSERT INTO records VALUES (?, ?, ?)", [("job_result", "5", '{"name": "5"}'),
                                                                   ("program_run", "6", "{}"), ("job", "6", "{}")])
    store.close()
    store = Store(path)
    assert store._db.execute("SELECT kind, name FROM records ORDER BY kind").fetchall() == [
        ("job", "6"), ("program_run", "6")]  # job 6 is still live: its record stays
    assert store._db.execute("SELECT id, kind, doc FROM job_history_records").fetchall() == [
        (5, "job_result", '{"name": "5"}')]
    store.close()


def test_a_rebuild_leaves_out_a_history_row_that_is_not_utf8_and_history_reads_after(tmp_path):
    """Regression: the rebuild copied rows with INSERT ... SELECT, so a row of random bytes outside the damaged page
    survived it, and `vipu history` then failed for good, printing its bytes."""
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    path = state / "vipu.sqlite3"
    with sqlite3.connect(path) as db:  # valid JSON to SQLite, but not text: only a decoding finds it
        db.execute("UPDATE job_history SET doc = CAST(? AS TEXT) WHERE id = 5", (b'{"id": "\xff\xfe"}',))
    damage_last_page(path)
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    quarantined = dict(plane.store._db.execute("SELECT name, error FROM quarantine WHERE kind = 'job_history'"))
    assert quarantined["5"].startswith("its bytes are not UTF-8 text")
    kept = [i for _, i in plane.store.history_keys()]
    assert 5 not in kept and set(plane.store.history_docs(kept)) == set(kept)  # every kept row reads
    plane.store.close()


def test_a_history_row_of_random_bytes_is_refused_at_start_and_moved_aside_by_the_named_fix(tmp_path):
    """Regression: a start checked only the history's pages, so a readable page holding a row of random bytes
    passed, and `vipu history` failed for good."""
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    path = state / "vipu.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE job_history SET doc = CAST(? AS TEXT) WHERE id = 7", (b"\x00\xff\x13 random" * 20,))
    with pytest.raises(InvalidArgument) as refused:
        open_plane("bow-pod16", state, "127.0.0.1", 0)
    assert str(refused.value) == (f"the state database {path} has 1 job history row(s) it cannot read: job 7: not a"
                                  " JSON document: damaged on disk; start once with --quarantine-bad-records to move"
                                  " them into its quarantine table (kept for inspection)")
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    assert plane.store._db.execute("SELECT name, CAST(doc AS BLOB) FROM quarantine").fetchall() == [
        ("7", b"\x00\xff\x13 random" * 20)]
    kept = [i for _, i in plane.store.history_keys()]
    assert kept == [i for i in range(1, JOBS + 1) if i != 7] and len(plane.store.history_docs(kept)) == JOBS - 1
    plane.store.close()
    open_plane("bow-pod16", state, "127.0.0.1", 0).store.close()  # and the next start is a plain one


def test_a_history_row_that_is_not_utf8_fails_its_read_naming_the_row_and_the_fix_not_its_bytes(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    store = Store(state / "vipu.sqlite3")
    store._db.execute("UPDATE job_history SET doc = CAST(? AS TEXT) WHERE id = 3", (b'{"id": "\xff\xfe"}',))
    with pytest.raises(Unavailable) as failed:
        store.history_docs([2, 3])
    assert failed.value.message == (f"job 3 in the job history of {store.path} is damaged (its bytes are not UTF-8"
                                    " text); restart the controller once with --quarantine-bad-records to move it"
                                    " aside")
    assert store.history_docs([2])  # the others read
    store.close()


@pytest.mark.parametrize("damage", ["cells", "rowid"])
def test_a_rebuild_names_every_job_a_damaged_page_lost_and_no_id_read_from_its_bytes(tmp_path, caplog, damage):
    """Regression: random bytes over a page's cells (its header kept) left reads that end early without an error,
    so the rebuild said `0 lost` while 4 jobs were gone; bytes over a cell's rowid made a row that was listed as job
    4920; and `vipu show job` of a lost id sent the user to `vipu history`, which did not have it."""
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    path = state / "vipu.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        leaves = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'job_history' AND pagetype ="
                                           " 'leaf' ORDER BY pageno")]
    at = (leaves[len(leaves) // 2] - 1) * page_size  # a page in the middle of the table
    with open(path, "r+b") as f:
        if damage == "cells":
            f.seek(at + 8)
            f.write(os.urandom(page_size - 8))
        else:  # the first cell's rowid (ids over 127: two bytes, after its one- or two-byte size) becomes 4920
            f.seek(at + 8)
            cell = int.from_bytes(f.read(2), "big")
            f.seek(at + cell)
            size = 2 if f.read(1)[0] & 0x80 else 1
            f.seek(at + cell + size)
            f.write(bytes([0x80 | 4920 >> 7, 4920 & 0x7F]))
    with pytest.raises(InvalidArgument):
        open_plane("bow-pod16", state, "127.0.0.1", 0)
    with caplog.at_level("WARNING", logger="vipu.recovery"):
        plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    kept = {i for _, i in plane.store.history_keys()}
    quarantined = dict(plane.store._db.execute("SELECT name, error FROM quarantine WHERE kind = 'job_history'"))
    lost = set(range(1, JOBS + 1)) - kept
    assert lost and kept <= set(range(1, JOBS + 1))  # no row made up of the damaged bytes
    if damage == "rowid":
        assert len(lost) == 1 and plane.store._db.execute(
            "SELECT name FROM quarantine WHERE kind = 'job_history_stray'").fetchall() == [("4920",)]
    assert set(quarantined) == set(map(str, lost)), (quarantined, lost)
    [line] = [r.getMessage() for r in caplog.records if "rebuilt" in r.getMessage()]
    assert f": {len(kept)} of {JOBS} jobs kept, {len(lost)} lost (listed in its quarantine table: " in line, line
    assert all(str(i) in line for i in sorted(lost)[:20])
    for i in lost:
        with pytest.raises(NotFound) as missing:
            plane.scheduler.table.get(i)
        assert missing.value.message.startswith(f"job {i} was lost at a start with --quarantine-bad-records: its")
        assert "vipu history" not in missing.value.message
    plane.store.close()


def test_a_retry_finds_its_jobs_moved_into_the_history_before_the_start_and_since(tmp_path):
    """The store keeps in memory which (user, request id) pairs its history may hold (store_request_keys.py): a
    submission whose pair it never held reads nothing, and one moved in, before this start or since, is found."""
    state = tmp_path / "state"
    state.mkdir()
    plane = open_plane("bow-pod16", state, "127.0.0.1", 0)
    job = ended_job(plane, 1)
    plane.store.commit([(HISTORY_KIND, "1", job.updated({"request_id": "before"}))], [])
    plane.store.close()
    store = Store(state / "vipu.sqlite3")
    try:
        assert [i for i, _ in store.history_requests(job.user, "before")] == [1]  # read while the keys load
        wait_for(lambda: not store.request_keys.may_hold(job.user, "never"))  # loaded
        store.commit([(HISTORY_KIND, "2", job.updated({"id": 2, "request_id": "since"}))], [])
        assert [i for i, _ in store.history_requests(job.user, "before")] == [1]
        assert [i for i, _ in store.history_requests(job.user, "since")] == [2]
        assert store.history_requests(job.user, "never") == []
        assert store.history_requests("someone-else", "before") == []
    finally:
        store.close()


def test_a_rebuild_that_lost_no_job_says_so_and_lists_none(tmp_path, caplog):
    """Regression: damage only in an index of the history (every row copied) was logged as `0 lost (listed in its
    quarantine table: )`."""
    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    damage_last_page(state / "vipu.sqlite3", of="job_history_user")
    with caplog.at_level("WARNING", logger="vipu.recovery"):
        plane = open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    [line] = [r.getMessage() for r in caplog.records if "rebuilt" in r.getMessage()]
    assert f": {JOBS} of {JOBS} jobs kept, none lost; the damaged file is " in line, line
    assert {i for _, i in plane.store.history_keys()} == set(range(1, JOBS + 1))
    plane.store.close()


def test_a_rebuild_the_disk_has_no_room_for_is_unavailable_not_damage(tmp_path):
    """Regression: a rebuild whose new file did not fit on the disk was refused as a database that "could not be
    rebuilt", exit 2 with advice to restore or move it away. The disk fills for real as SQLite sees it: a file size
    limit (ulimit -f) above the files a start writes (the -shm file: 32 KiB) and below the rebuilt copy."""
    import resource
    import signal

    state = tmp_path / "state"
    state.mkdir()
    state_with_history(state)
    path = state / "vipu.sqlite3"
    damage_last_page(path)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    was = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, limit[1]))
    try:
        with pytest.raises(Unavailable) as unwritable:
            open_plane("bow-pod16", state, "127.0.0.1", 0, quarantine=True)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, was)
    assert unwritable.value.message.startswith(f"the state folder {state} cannot be written (")
    assert "its records are kept" in unwritable.value.message
    with pytest.raises(InvalidArgument, match="has damaged pages in its job history"):  # as it was
        open_plane("bow-pod16", state, "127.0.0.1", 0)


def test_a_history_read_of_any_number_of_ids_or_users_answers(tmp_path):
    """Regression (walk45): every id was a bound value, twice, so `History` of ~125,000 ids passed SQLite's limit and
    answered UNAVAILABLE, telling the operator to restart a controller whose history was whole."""
    job = state_with_history(tmp_path / "state")
    store = Store(tmp_path / "state" / "vipu.sqlite3")
    many = list(range(JOBS - 1, 400_000))
    assert [i for _, i in store.history_keys(ids=many)] == [JOBS - 1, JOBS]
    others = [f"u{n}" for n in range(300_000)]
    assert [i for _, i in store.history_keys(users=others, ids=[1])] == []
    assert [i for _, i in store.history_keys(users=[*others, job.user], ids=many)] == [JOBS - 1, JOBS]
    assert [i for _, i in store.history_keys(ids=[2, 1], states=["CANCELLED"], since=0.0)] == [1, 2]
    store.close()


def test_unknown_users_are_found_in_one_history_read_however_many_are_named(tmp_path):
    """Regression (walk45): one read a name not in the queue; `vipu queue -u` of 200,000 names held an RPC thread 34 s
    (of the controller's 3)."""
    job = state_with_history(tmp_path / "state")
    plane = open_plane("bow-pod16", tmp_path / "state", "127.0.0.1", 0)
    reads = []
    read = plane.store._read
    plane.store._read = lambda *args, **kw: reads.append(args) or read(*args, **kw)
    names = [f"u{n}" for n in range(50_000)]
    assert plane.job_views.unknown_users([*names, job.user]) == names
    assert len(reads) == 1
    plane.store.close()


def test_a_history_read_of_one_user_reads_their_index_in_order_with_statistics_or_without(tmp_path):
    """Regression: every filter list was bound as a JSON array, whose length the planner cannot know, so one user's
    listing sorted their rows; once ANALYZE had left statistics, it scanned the whole history in ended order."""
    job = state_with_history(tmp_path / "state")
    store = Store(tmp_path / "state" / "vipu.sqlite3")
    store.commit([(HISTORY_KIND, str(i), job.updated({"id": i, "user": "rare"})) for i in range(JOBS + 1, JOBS + 4)],
                 [])
    reads = []
    read = store._read
    store._read = lambda *args, **kw: reads.append(args) or read(*args, **kw)
    for analyzed in (False, True):
        with sqlite3.connect(store.path) as db:
            if analyzed:
                db.execute("ANALYZE")
            for asked in ({"users": ["rare"]}, {"users": ["rare"], "since": 0.0}):
                reads.clear()
                assert [i for _, i in store.history_keys(**asked)] == [JOBS + 1, JOBS + 2, JOBS + 3]
                [(sql, args)] = reads
                plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql, args)]
                assert plan[0].startswith("SEARCH job_history USING COVERING INDEX job_history_user (user=?"), plan
                assert not any("TEMP B-TREE" in step for step in plan), (analyzed, plan)
    store.close()
