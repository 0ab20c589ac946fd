"""The SQLite store: WAL mode, all-or-nothing commits, records survive reopening."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager

import pytest

from vipu.partition.admin_records import User
from vipu.store import DamagedRecords, Dropped, Store
from vipu.store_schema import SCHEMA_VERSION, NewerSchema, UnknownSchema


def user(name: str) -> User:
    return User(name=name, key_sha256="0" * 64, created_at=1.0)


@contextmanager
def held(store: Store):
    """The writing thread busy with other work until the block ends: what is queued meanwhile waits."""
    go = threading.Event()
    store._writer.submit(go.wait)
    try:
        yield
    finally:
        go.set()


@contextmanager
def stalled(store: Store):
    """The next transaction stuck inside its write, as in the kernel on a frozen disk, until the block ends;
    yields an Event set once it is stuck."""
    go, inside = threading.Event(), threading.Event()
    write = store._write

    def stuck(*args):
        inside.set()
        go.wait()
        write(*args)

    store._write = stuck
    try:
        yield inside
    finally:
        store._write = write
        go.set()


def test_wal_mode_and_reopen(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "a", user("a")), ("user", "b", user("b"))], [])
    store.commit([], [("user", "a")])
    store.set_meta("pod", {"name": "bow-pod64"})
    store.close()
    again = Store(tmp_path / "s.db")
    assert again._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert again.load({"user": User}) == [("user", user("b"))]
    assert again.get_meta("pod") == {"name": "bow-pod64"}
    assert again.get_meta("missing") is None


def test_a_failed_commit_stores_nothing(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "keep", user("keep"))], [])

    class Exploding(User):
        def model_dump_json(self, **kwargs):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.commit([("user", "x", user("x")), ("user", "y", Exploding(name="y", key_sha256="", created_at=0))], [])
    store._db.execute("BEGIN")  # a rolled-back or never-begun transaction leaves the connection usable
    store._db.execute("ROLLBACK")
    assert [r.name for _, r in store.load({"user": User})] == ["keep"]


def test_unknown_kinds_are_left_for_their_owner(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "a", user("a"))], [])
    with sqlite3.connect(tmp_path / "s.db") as raw:
        raw.execute("INSERT INTO records VALUES ('job', '1', '{}')")
    assert [kind for kind, _ in store.load({"user": User})] == ["user"]


def test_a_batch_is_queued_as_one_write_at_its_end_in_order(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "old", user("old"))], [])
    with held(store):
        with store.batch():
            store.commit([("user", "a", user("a"))], [])
            store.commit([], [("user", "old")])
            store.commit([("user", "b", user("b"))], [])
            store.commit([], [("user", "b")])  # created and removed within the batch: never stored
            store.commit([("user", "a", user("a2"))], [])  # the last write of a key wins
            assert store.get("user", "a", User) == user("a2")  # this thread reads its own batch
            assert store.get("user", "old", User) is None
            with sqlite3.connect(tmp_path / "s.db") as raw:  # nobody else sees it before the batch ends
                assert sorted(r[0] for r in raw.execute("SELECT name FROM records")) == ["old"]
        assert store.enqueued == 2 and stored(tmp_path / "s.db") == ["old"]  # queued: not stored yet
    store.flush()
    assert store.load({"user": User}) == [("user", user("a2"))]


def test_a_batch_ending_in_an_error_keeps_what_was_committed(tmp_path):
    store = Store(tmp_path / "s.db")
    with pytest.raises(RuntimeError):
        with store.batch():
            store.commit([("user", "a", user("a"))], [])
            raise RuntimeError("the step failed after its commit")
    store.flush()
    assert [r.name for _, r in store.load({"user": User})] == ["a"]


def test_other_threads_commit_straight_through_during_a_batch(tmp_path):
    import threading

    store = Store(tmp_path / "s.db")
    with store.batch():
        worker = threading.Thread(target=store.commit, args=([("user", "t", user("t"))], []))
        worker.start()
        worker.join()
        with sqlite3.connect(tmp_path / "s.db") as raw:
            assert [r[0] for r in raw.execute("SELECT name FROM records")] == ["t"]


def stored(path) -> list[str]:
    with sqlite3.connect(path) as raw:
        return sorted(r[0] for r in raw.execute("SELECT name FROM records"))


def test_queued_writes_are_written_in_order_by_one_flush(tmp_path):
    store = Store(tmp_path / "s.db")
    with held(store):
        for name in ("a", "b"):
            with store.batch():
                store.commit([("user", name, user(name))], [])
        with store.batch():
            store.commit([], [("user", "a")])  # queued after a's put: a is gone once flushed
        assert store.enqueued == 3 and stored(tmp_path / "s.db") == []
    store.flush(1)  # one transaction writes everything queued, not just what this waits for
    assert stored(tmp_path / "s.db") == ["b"]
    store.flush()  # nothing left: returns at once
    assert store.load({"user": User}) == [("user", user("b"))]


def test_reading_back_another_threads_queued_write_stores_it_first(tmp_path):
    store = Store(tmp_path / "s.db")
    with held(store):
        with store.batch():
            store.commit([("user", "a", user("a"))], [])
        assert stored(tmp_path / "s.db") == []
    assert store.get("user", "a", User) == user("a")
    assert stored(tmp_path / "s.db") == ["a"]  # never answers with what a SIGKILL could take back


def fill(store: Store) -> None:
    """A full disk as SQLite meets one: no page beyond those the database has (SQLITE_FULL)."""
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")


def free(store: Store) -> None:
    store._db.execute("PRAGMA max_page_count = 1073741823")


def many(prefix: str, n: int = 200) -> list:
    return [("user", f"{prefix}{i:03}", user(f"{prefix}{i:03}")) for i in range(n)]  # more than the free room


def test_a_failed_group_write_is_dropped_never_written_later(tmp_path):
    """An error must mean nothing changed: a write that failed is not kept for a later one to store."""
    store = Store(tmp_path / "s.db")
    store.commit([("user", "kept", user("kept"))], [])
    heard = []
    store.on_health = heard.append
    store.on_dropped = lambda: None  # the controller's rollback; here, discard() below
    fill(store)
    with store.batch():
        store.commit(many("a"), [])
    first = store.own
    with store.batch():
        store.commit([("user", "b", user("b"))], [])  # queued after it, made on top of it
    second = store.own
    with pytest.raises(Dropped, match=r"could not be written \(database or disk is full\), so nothing changed: free"
                                      r" space .* then retry"):
        store.flush(first, first)
    assert store.failed and not store.writable and heard == [False]
    with pytest.raises(Dropped, match="nothing changed"):
        store.flush(second, second)  # not written either, even had there been room for it
    assert store.discard() and not store.failed
    with pytest.raises(Dropped):
        store.flush(second, second)  # a waiter that comes late still hears its write was dropped
    free(store)
    store.commit([("user", "c", user("c"))], [])
    assert heard == [False, True]
    assert stored(tmp_path / "s.db") == ["c", "kept"]
    store.close()
    assert [r.name for _, r in Store(tmp_path / "s.db").load({"user": User})] == ["c", "kept"]


def test_the_retry_thread_asks_for_the_rollback_and_writes_nothing_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr("vipu.store_drops.RETRY_S", 0.01)
    store = Store(tmp_path / "s.db")
    heard = []
    store.on_health = heard.append
    fill(store)
    with pytest.raises(Dropped):
        store.commit(many("a"), [])  # the default on_dropped discards: there is no memory to undo
    free(store)
    deadline = time.monotonic() + 10
    while heard != [False, True] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert heard == [False, True]  # its probe wrote: the disk takes writes again
    assert not store.failed and stored(tmp_path / "s.db") == []


def test_concurrent_commits_are_all_durable_when_they_return(tmp_path):
    import threading

    store = Store(tmp_path / "s.db")
    missing = []

    def commit(i: int) -> None:
        store.commit([("user", f"u{i}", user(f"u{i}"))], [])
        if f"u{i}" not in stored(tmp_path / "s.db"):  # another connection: what a restart would read
            missing.append(i)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert missing == [] and len(stored(tmp_path / "s.db")) == 40


def test_the_state_lock_returns_only_once_what_its_holder_could_see_is_stored(tmp_path):
    from vipu.control.lock import StateLock

    store = Store(tmp_path / "s.db")
    lock = StateLock(store)
    go = threading.Event()
    store._writer.submit(go.wait)  # the writing thread busy
    with store.batch():  # another thread's step, queued but not yet written
        store.commit([("user", "other", user("other"))], [])
    with lock:  # a reader: it could have seen "other"
        assert stored(tmp_path / "s.db") == []
        go.set()  # leaving the lock waits until "other" is written
    assert stored(tmp_path / "s.db") == ["other"]
    with lock:
        store.commit([("user", "mine", user("mine"))], [])
        assert stored(tmp_path / "s.db") == ["other"]  # queued inside the lock, written as it is released
    assert stored(tmp_path / "s.db") == ["mine", "other"]


def test_a_new_database_has_the_current_schema_version(tmp_path):
    store = Store(tmp_path / "s.db")
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"records", "meta", "quarantine", "job_history", "job_history_records"}


def test_a_database_from_before_the_numbering_is_migrated_keeping_its_records(tmp_path):
    with sqlite3.connect(tmp_path / "s.db") as db:  # what every version before the numbering wrote
        db.execute("CREATE TABLE records (kind TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,"
                   " PRIMARY KEY (kind, name)) WITHOUT ROWID")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO records VALUES ('user', 'a', ?)", (user("a").model_dump_json(),))
    store = Store(tmp_path / "s.db")
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.load({"user": User}) == [("user", user("a"))]


def test_a_database_from_a_newer_version_is_refused_untouched(tmp_path):
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(NewerSchema) as e:
        Store(tmp_path / "s.db")
    assert e.value.found == SCHEMA_VERSION + 1
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []  # nothing created in it


def test_damaged_records_are_named_and_quarantined_as_they_were(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "a", user("a")), ("user", "b", user("b"))], [])
    store._db.execute("UPDATE records SET doc = '{not json' WHERE name = 'b'")
    with pytest.raises(DamagedRecords) as e:
        store.load({"user": User})
    [damaged] = e.value.damaged
    assert (damaged.kind, damaged.name) == ("user", "b") and "Invalid JSON" in damaged.error
    store.quarantine(e.value.damaged, 5.0)
    assert store.load({"user": User}) == [("user", user("a"))]
    assert store._db.execute("SELECT kind, name, doc, moved FROM quarantine").fetchall() == [
        ("user", "b", "{not json", 5.0)]


def test_a_record_whose_bytes_are_not_utf8_is_named_and_moved_aside_not_a_failed_read(tmp_path):
    """Regression: SQLite's decoding failed the whole read ("Could not decode to UTF-8 column 'doc'"), so neither a
    start nor --quarantine-bad-records could get past one such record."""
    store = Store(tmp_path / "s.db")
    store.commit([("user", "a", user("a")), ("user", "b", user("b"))], [])
    garbage = b'{"name": "b\xff\xfe\x13'
    store._db.execute("UPDATE records SET doc = CAST(? AS TEXT) WHERE name = 'b'", (garbage,))
    with pytest.raises(DamagedRecords) as e:
        store.load({"user": User})
    assert e.value.damaged == [("user", "b", "its bytes are not UTF-8 text (byte 11 of 14): damaged on disk")]
    store.quarantine(e.value.damaged, 5.0)
    assert store.load({"user": User}) == [("user", user("a"))]
    assert store._db.execute("SELECT name, CAST(doc AS BLOB) FROM quarantine").fetchall() == [("b", garbage)]


@pytest.mark.parametrize("change,why", [
    ({"created_at": "soon"}, "field created_at: Input should be a valid number, unable to parse string as a number,"
                             " not 'soon'"),
    ({"admin": "maybe", "colour": 1}, "field admin: Input should be a valid boolean, unable to interpret input, not"
                                      " 'maybe'; field colour: not a field of this version's"),
])
def test_a_damaged_record_is_said_in_one_plain_line_naming_the_field(tmp_path, change, why):
    """Regression: the refusal quoted pydantic's text, cut mid-word, with its URL."""
    store = Store(tmp_path / "s.db")
    store.commit([("user", "a", user("a"))], [])
    store._db.execute("UPDATE records SET doc = ?", (json.dumps({**user("a").model_dump(), **change}),))
    with pytest.raises(DamagedRecords) as e:
        store.load({"user": User})
    assert e.value.damaged == [("user", "a", why)]


def test_a_schema_version_below_zero_is_refused_not_migrated(tmp_path):
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("PRAGMA user_version = -1")
    with pytest.raises(UnknownSchema) as e:
        Store(tmp_path / "s.db")
    assert e.value.found == -1
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []  # nothing created in it


def test_a_job_stored_before_uid_comment_and_submit_line_loads_without_them(tmp_path):
    """Schema 6 keeps a job's owner's uid, comment and submit line: a database of schema 5 is brought up to date,
    and its jobs load with none of them (sacct shows those fields empty)."""
    from vipu.scheduler.job_record import Job
    from vipu.scheduler.job_spec import parse_spec
    from vipu.scheduler.submission import build_jobs

    [job] = build_jobs(parse_spec({"ipus": 1, "time_limit": 60, "qos": "normal", "comment": "c"}), 7, 1, 3.0, None,
                       None, uid=1000)
    old = json.loads(job.model_dump_json())
    del old["uid"], old["spec"]["comment"], old["spec"]["submit_line"]  # as schema 5 wrote it
    with sqlite3.connect(tmp_path / "s.db") as db:
        Store(tmp_path / "s.db").close()
        db.execute("PRAGMA user_version = 5")
        db.execute("INSERT INTO records VALUES ('job', '7', ?)", (json.dumps(old),))
    store = Store(tmp_path / "s.db")
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    [(kind, loaded)] = store.load({"job": Job})
    assert (kind, loaded.id, loaded.uid, loaded.spec.comment, loaded.spec.submit_line) == ("job", 7, None, None, None)
    store.commit([("job", "7", job)], [])
    assert store.load({"job": Job})[0][1].uid == 1000 and store.load({"job": Job})[0][1].spec.comment == "c"


def test_a_program_run_stored_before_its_node_was_kept_loads_without_it(tmp_path):
    """Schema 7 keeps the Ray node a program's run is supervised on, its spool and why its end could not be read: a
    database of schema 6 is brought up to date, and its runs load with none of them (a restart reads their ends on
    the controller's machine only, as before)."""
    from vipu.jobs.programs.program_record import ProgramRecord

    old = {"name": "7", "run": 1, "output": "/home/u/slurm-7.out", "error": None, "node": "", "failure": None,
           "steps": [], "steps_reported": 0, "ipu_usage": []}  # as schema 6 wrote it
    with sqlite3.connect(tmp_path / "s.db") as db:
        Store(tmp_path / "s.db").close()
        db.execute("PRAGMA user_version = 6")
        db.execute("INSERT INTO records VALUES ('program_run', '7', ?)", (json.dumps(old),))
    store = Store(tmp_path / "s.db")
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    loaded = store.get("program_run", "7", ProgramRecord)
    assert (loaded.node, loaded.node_address, loaded.spool, loaded.ended) == ("", "", "", None)
    store.commit([("program_run", "7", loaded.model_copy(update={"node": "ab" * 28, "spool": "/tmp/vipu-spool-x"}))],
                 [])
    assert store.get("program_run", "7", ProgramRecord).node == "ab" * 28
