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
