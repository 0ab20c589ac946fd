"""Whether the state database lost its write-ahead log: a generation number kept in the database and in a marker.

Why a generation: the marker file (vipu.generation) holds the number the database got when it was last opened or
checkpointed. A kill -9 leaves the marker and the -wal file. If the -wal file is then deleted, the database file
alone holds an older number than the marker: the commits since are gone, and would be lost without a word (job ids
handed out again). A tool that opens the database and closes it cleanly (sqlite3) checkpoints the -wal file into it
first, so the numbers still agree. Checkpoints are the store's checkpointer's, not SQLite's, for the same reason:
after each one it moves the number on. The marker is not named vipu.sqlite3-...: a clean-up of SQLite's side files
(rm vipu.sqlite3-*) must leave it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path


class LostLog(Exception):
    """The database's write-ahead log is gone although the last process to use it did not close it."""

    def __init__(self, message: str, held: int = 0, marked: int = 0):
        super().__init__(message)
        self.held = held  # the generation the database file holds
        self.marked = marked  # the one the last controller reached


class EmptiedDatabase(Exception):
    """The database holds no state at all, but the marker shows a controller had it open: emptied, or replaced."""

    def __init__(self, marker: Path, marked: int):
        super().__init__(f"{marker} shows a controller had it open at generation {marked}")
        self.marked = marked


class Generation:
    def __init__(self, path: Path):
        self.marker = path.with_name(path.stem + ".generation")
        self.wal = path.with_name(path.name + "-wal")

    def how_lost(self, db: sqlite3.Connection, wal_was_there: bool) -> str | None:
        """How the -wal file may have lost commits, for check(): missing, or holding no whole commit; None when SQLite
        found commits in it. Why both: an emptied -wal file (`: > vipu.sqlite3-wal` to free space, a copy cut short)
        loses what a deleted one loses, yet is there (walk45). Call before anything writes to it; asking is a passive
        checkpoint, which copies the commits it finds into the database file, so the file alone still never lacks a
        commit the marker's number covers."""
        if not wal_was_there:
            return "is missing"
        frames = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]  # -1: not in WAL mode, nothing to say
        return "holds no whole commit (emptied, or cut short)" if frames == 0 else None

    def accepted_loss(self, db: sqlite3.Connection, how: str | None, accept: bool) -> LostLog | None:
        """check() where how_lost() named a loss: the LostLog that `accept` (--accept-lost-log) lets a start go on
        with; raised without it."""
        if how is None:
            return None
        try:
            self.check(db, how)
        except LostLog as e:
            if not accept:
                raise
            return e
        return None

    def check(self, db: sqlite3.Connection, how: str = "is missing") -> None:
        """LostLog if the marker says the database held a later generation than it does, EmptiedDatabase if it holds
        none (call when the -wal file was missing before the database was opened, or held no commit: `how`)."""
        try:
            marked = int(self.marker.read_text())
        except (FileNotFoundError, ValueError):
            return  # closed cleanly, or by a version without the marker
        held = _held(db)
        if held is None:  # every version that writes the marker keeps its number in the database too
            raise EmptiedDatabase(self.marker, marked)
        if held < marked:
            raise LostLog(f"{self.wal} {how}, but {self.marker} shows the last controller stopped without"
                          " closing the database (a kill -9 or a crash), and its latest changes were in that file",
                          held, marked)

    def mark(self, db: sqlite3.Connection) -> None:
        """A new generation, in the database (its -wal file) first, then in the marker. A database that had none
        (made just now) is checkpointed at once, as the checkpointer would (ahead, then reached): else its file
        holds nothing until the first checkpoint, and a -wal file lost before it looked like an emptied database,
        not a lost log."""
        held = _held(db)
        _set(db, (held or 0) + 1)
        self._write_marker((held or 0) + 1)
        if held is None:
            generation = self.ahead(db)
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self.reached(db, generation)

    def ahead(self, db: sqlite3.Connection) -> int:
        """Before a checkpoint: the marker moves to the next generation, which the database gets only after
        (`reached`). Why first: the checkpoint copies the -wal file's generation into the database file, and a
        commit may land before the next number is in the -wal file; with the marker already ahead, the database
        file alone never matches it while the -wal file holds commits it lacks."""
        generation = (_held(db) or 0) + 1
        self._write_marker(generation)
        return generation

    @staticmethod
    def reached(db: sqlite3.Connection, generation: int) -> None:
        """After the checkpoint: the database (its -wal file) holds the generation the marker shows."""
        _set(db, generation)

    def _write_marker(self, generation: int) -> None:
        part = self.marker.with_name(self.marker.name + ".part")
        part.unlink(missing_ok=True)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as marker:
                marker.write(f"{generation}\n")
            os.replace(part, self.marker)
        except OSError:  # a full disk: no half-written marker left beside the real one
            part.unlink(missing_ok=True)
            raise

    def closed(self) -> None:
        """The database was closed cleanly: nothing can have been lost since."""
        self.marker.unlink(missing_ok=True)


def _set(db: sqlite3.Connection, generation: int) -> None:
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(generation),))


def _held(db: sqlite3.Connection) -> int | None:
    row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return json.loads(row[0]) if row else None
