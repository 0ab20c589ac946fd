"""Durable state in SQLite (WAL): every record the controller keeps, as JSON keyed by (kind, name).

Why synchronous=NORMAL is enough: in WAL mode a commit has been written to the WAL file (write(2)) before it
returns, so it survives the process being killed with SIGKILL; only a power cut can lose the last commits, and an
emulator has no power to cut. That keeps a commit in tens of microseconds instead of an fsync's milliseconds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel

MAX_ROWS_PER_STATEMENT = 1000  # 3 bound values a row, well under SQLite's 32,766 variables per statement

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    doc  TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class Store:
    """Implements the domain's Journal: commit() is one transaction, durable when it returns."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._batch = threading.local()  # this thread's open batch: (kind, name) -> doc, or None for a delete

    @contextmanager
    def batch(self):
        """Within the block, this thread's commits are collected and written as one transaction when it ends
        (also when it ends with an error: what was committed was committed). Why: one scheduling step starts and
        ends many jobs, each a few records; one SQLite commit instead of one per record is most of its cost.
        Callers close the block before anyone can see the change (the controller does it inside its state lock,
        before an RPC answers), so a commit is still durable before it is acknowledged."""
        if getattr(self._batch, "pending", None) is not None:
            yield  # already inside this thread's batch
            return
        self._batch.pending = {}
        try:
            yield
        finally:
            pending, self._batch.pending = self._batch.pending, None
            self._write([(k, n, doc) for (k, n), doc in pending.items() if doc is not None],
                        [key for key, doc in pending.items() if doc is None])

    def commit(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None:
        rows = [(kind, name, record.model_dump_json()) for kind, name, record in puts]
        gone = list(deletes)
        pending = getattr(self._batch, "pending", None)
        if pending is None:
            self._write(rows, gone)
            return
        for key in gone:
            pending[key] = None
        for kind, name, doc in rows:
            pending[(kind, name)] = doc

    def _write(self, rows: list[tuple[str, str, str]], gone: list[tuple[str, str]]) -> None:
        if not rows and not gone:
            return
        with self._lock:
            if not gone and len(rows) <= MAX_ROWS_PER_STATEMENT:
                # one statement is one implicit transaction: atomic, and a third of the round trips of BEGIN/COMMIT
                values = ", ".join(["(?, ?, ?)"] * len(rows))
                self._db.execute(
                    f"INSERT OR REPLACE INTO records (kind, name, doc) VALUES {values}", [v for r in rows for v in r]
                )
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if rows:
                    self._db.executemany("INSERT OR REPLACE INTO records (kind, name, doc) VALUES (?, ?, ?)", rows)
                if gone:
                    self._db.executemany("DELETE FROM records WHERE kind = ? AND name = ?", gone)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def load(self, kinds: dict[str, type[BaseModel]]) -> list[tuple[str, BaseModel]]:
        """Every stored record of the given kinds, parsed; unknown kinds are left for the part that owns them."""
        with self._lock:
            rows = self._db.execute("SELECT kind, doc FROM records ORDER BY kind, name").fetchall()
        return [(kind, kinds[kind].model_validate_json(doc)) for kind, doc in rows if kind in kinds]

    def get(self, kind: str, name: str, model: type[BaseModel]) -> BaseModel | None:
        pending = getattr(self._batch, "pending", None) or {}
        if (kind, name) in pending:
            doc = pending[(kind, name)]
            return model.model_validate_json(doc) if doc is not None else None
        with self._lock:
            row = self._db.execute("SELECT doc FROM records WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        return model.model_validate_json(row[0]) if row else None

    def get_meta(self, key: str) -> object | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: object) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def close(self) -> None:
        with self._lock:
            self._db.close()
