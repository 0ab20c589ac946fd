"""The SQLite store: WAL mode, all-or-nothing commits, records survive reopening."""

from __future__ import annotations

import sqlite3

import pytest

from vipu.partition.admin_objects import User
from vipu.store import Store


def user(name: str) -> User:
    return User(name=name, key_sha256="0" * 64, created_at=1.0)


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


def test_a_batch_is_written_once_at_its_end_in_order(tmp_path):
    store = Store(tmp_path / "s.db")
    store.commit([("user", "old", user("old"))], [])
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
    assert store.load({"user": User}) == [("user", user("a2"))]


def test_a_batch_ending_in_an_error_keeps_what_was_committed(tmp_path):
    store = Store(tmp_path / "s.db")
    with pytest.raises(RuntimeError):
        with store.batch():
            store.commit([("user", "a", user("a"))], [])
            raise RuntimeError("the step failed after its commit")
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
