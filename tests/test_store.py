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
