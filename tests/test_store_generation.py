"""The lost-log generation: the database file alone never matches the marker while the -wal file holds commits
it lacks, whenever a kill -9 lands (store_generation.py)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from vipu.store_generation import Generation, LostLog


def opened(path):
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY)")
    return db


def killed_then_wal_lost(folder, into):
    """What a kill -9 now, then `rm vipu.sqlite3-wal`, would leave: the database file and the marker only."""
    into.mkdir()
    shutil.copy(folder / "s.db", into / "s.db")
    shutil.copy(folder / "s.generation", into / "s.generation")
    return into / "s.db"


@pytest.mark.parametrize("kill_after", ["ahead", "checkpoint", "commit", "reached"])
def test_a_commit_beside_a_checkpoint_is_never_lost_without_a_word(tmp_path, kill_after):
    """Regression: the marker moved on only after the checkpoint, so a commit landing between the two was in the
    -wal file alone while the database file's number matched the marker: deleting the -wal file lost it silently."""
    folder = tmp_path / "state"
    folder.mkdir()
    db = opened(folder / "s.db")
    generation = Generation(folder / "s.db")
    generation.mark(db)
    checkpointer = sqlite3.connect(folder / "s.db", isolation_level=None)
    checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")  # a controller that ran a while: its file has a number
    db.execute("INSERT INTO jobs VALUES (1)")

    number = generation.ahead(db)
    steps = [
        ("checkpoint", lambda: checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")),
        ("commit", lambda: db.execute("INSERT INTO jobs VALUES (2)")),  # a submission between the two
        ("reached", lambda: generation.reached(db, number)),
    ]
    for name, step in steps if kill_after != "ahead" else []:
        step()
        if name == kill_after:
            break
    lost = killed_then_wal_lost(folder, tmp_path / "after")
    alone = sqlite3.connect(lost)
    with pytest.raises(LostLog):
        Generation(lost).check(alone)  # every moment leaves the database file behind the marker


def test_a_database_closed_cleanly_after_a_checkpoint_is_no_loss(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir()
    db = opened(folder / "s.db")
    generation = Generation(folder / "s.db")
    generation.mark(db)
    number = generation.ahead(db)
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    generation.reached(db, number)
    db.close()  # the last connection: SQLite copies the rest of the -wal file in
    assert not (folder / "s.db-wal").exists()
    Generation(folder / "s.db").check(sqlite3.connect(folder / "s.db"))  # the numbers agree: no LostLog


def test_a_log_lost_before_the_first_checkpoint_is_a_lost_log_not_an_emptied_database(tmp_path):
    """Regression: a new database's file held nothing until the checkpointer's first turn, so a kill -9 and a
    deleted -wal file in those seconds read as an emptied database, with the wrong fix offered."""
    folder = tmp_path / "state"
    folder.mkdir()
    db = opened(folder / "s.db")
    Generation(folder / "s.db").mark(db)
    db.execute("INSERT INTO jobs (id) VALUES (1)")  # in the -wal file alone
    copy = killed_then_wal_lost(folder, tmp_path / "copy")
    with pytest.raises(LostLog):
        Generation(copy).check(opened(copy))


def killed_store(tmp_path):
    """A store with a commit, copied as a kill -9 now leaves it (the database, its -wal file and the marker)."""
    from vipu.partition.admin_records import User
    from vipu.store import Store

    store = Store(tmp_path / "live" / "s.db")
    store.commit([("user", "a", User(name="a", key_sha256="0" * 64, created_at=1.0))], [])
    copy = tmp_path / "killed"
    shutil.copytree(tmp_path / "live", copy)
    store.close()
    return copy / "s.db"


@pytest.mark.parametrize("left", [0, 100])
def test_an_emptied_wal_file_is_a_lost_log_as_a_deleted_one_is(tmp_path, left):
    """Regression (walk45): the check ran only when the -wal file was missing, so one emptied after a kill -9 (`: >
    vipu.sqlite3-wal` to free space) served the database without its last commits, and handed their ids out again."""
    from vipu.store import Store

    path = killed_store(tmp_path)
    with open(path.with_name("s.db-wal"), "r+b") as wal:
        wal.truncate(left)
    with pytest.raises(LostLog, match="holds no whole commit"):
        Store(path)
    accepted = Store(path, accept_lost_log=True)
    assert accepted.lost_log is not None and accepted.lost_log.held < accepted.lost_log.marked
    accepted.close()


def test_a_wal_file_kept_whole_after_a_kill_is_served_with_its_commits(tmp_path):
    from vipu.partition.admin_records import User
    from vipu.store import Store

    again = Store(killed_store(tmp_path))
    assert again.lost_log is None and [u.name for _, u in again.load({"user": User})] == ["a"]
    again.close()


def test_a_kill_inside_a_checkpoint_is_no_lost_log(tmp_path):
    """The marker moves on before a checkpoint, the database after it: a kill between the two leaves the database a
    number behind the marker with its -wal file whole, and that is no loss."""
    folder = tmp_path / "state"
    folder.mkdir()
    db = opened(folder / "s.db")
    generation = Generation(folder / "s.db")
    generation.mark(db)
    db.execute("INSERT INTO jobs VALUES (1)")
    generation.ahead(db)
    sqlite3.connect(folder / "s.db", isolation_level=None).execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.execute("INSERT INTO jobs VALUES (2)")  # killed here, before reached()
    copy = tmp_path / "killed"
    shutil.copytree(folder, copy)
    again = opened(copy / "s.db")
    assert Generation(copy / "s.db").how_lost(again, wal_was_there=True) is None
    assert again.execute("SELECT count(*) FROM jobs").fetchone()[0] == 2
