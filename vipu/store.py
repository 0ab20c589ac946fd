"""Durable state in SQLite (WAL): every record the controller keeps, as JSON keyed by (kind, name).

Why synchronous=NORMAL is enough: in WAL mode a commit has been written to the WAL file (write(2)) before it
returns, so it survives the process being killed with SIGKILL; only a power cut can lose the last commits, and an
emulator has no power to cut. That keeps a commit in tens of microseconds instead of an fsync's milliseconds.

Group commit: writes are queued in order and written by whichever waiting thread gets to the database first, all
queued writes in one transaction, so concurrent submissions share a commit. The database therefore always holds a
prefix of the queue, and flush(upto) returns once everything up to a point is in it. A failed write raises
Unavailable in the thread that led it (any thread: a reader too) and stays queued for the next flush; so an error
from a flush does not say the write will not happen (a client retrying with its request_id is safe).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel

from vipu.errors import Unavailable

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
    """Implements the domain's Journal: commit() outside a batch is one transaction, durable when it returns."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()  # the connection; whoever holds it to write is the group's leader
        self._batch = threading.local()  # this thread's open batch: (kind, name) -> doc, or None for a delete
        self._queue_lock = threading.Lock()
        self._queue: list[dict[tuple[str, str], str | None]] = []  # queued writes, oldest first
        self._enqueued = 0  # writes ever queued
        self._written = 0  # of which in the database (a prefix)

    @contextmanager
    def batch(self):
        """Within the block, this thread's commits are collected and queued as one write when it ends (also when it
        ends with an error: what was committed was committed); flush() makes it durable. Why: one scheduling step
        starts and ends many jobs, each a few records; one SQLite commit instead of one per record is most of its
        cost. The controller queues inside its state lock (so writes are queued in the order they were made) and
        flushes after releasing it, before an RPC answers."""
        if getattr(self._batch, "pending", None) is not None:
            yield  # already inside this thread's batch
            return
        self._batch.pending = {}
        try:
            yield
        finally:
            pending, self._batch.pending = self._batch.pending, None
            if pending:
                self._enqueue(pending)

    def commit(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None:
        """Durable when it returns, unless inside a batch (then when the batch is flushed)."""
        changes: dict[tuple[str, str], str | None] = {key: None for key in deletes}
        changes.update({(kind, name): record.model_dump_json() for kind, name, record in puts})
        pending = getattr(self._batch, "pending", None)
        if pending is not None:
            pending.update(changes)
        elif changes:
            self.flush(self._enqueue(changes))

    @property
    def enqueued(self) -> int:
        """How many writes have ever been queued: flush(store.enqueued) waits for everything queued so far."""
        return self._enqueued

    def _enqueue(self, changes: dict[tuple[str, str], str | None]) -> int:
        with self._queue_lock:
            self._queue.append(changes)
            self._enqueued += 1
            return self._enqueued

    def flush(self, upto: int | None = None) -> None:
        """Return once the first `upto` queued writes (default: all queued so far) are in the database. The first
        thread to get the connection writes every queued write, its own and others', in one transaction."""
        upto = self._enqueued if upto is None else upto
        if self._written >= upto:
            return
        with self._lock:
            if self._written >= upto:
                return  # a leader wrote ours while we waited
            with self._queue_lock:
                queued, self._queue = self._queue, []
                last = self._enqueued
            merged: dict[tuple[str, str], str | None] = {}
            for changes in queued:
                merged.update(changes)
            try:
                self._write([(k, n, doc) for (k, n), doc in merged.items() if doc is not None],
                            [key for key, doc in merged.items() if doc is None])
            except BaseException as e:
                with self._queue_lock:  # not written: the next flush tries them again, still first in order
                    self._queue[:0] = queued
                if isinstance(e, sqlite3.Error):  # disk full, I/O error: a retry may succeed, so not INTERNAL
                    raise Unavailable(
                        f"the state store {self.path} could not be written ({e}); the change is kept and stored by"
                        " the next write: retry (a submit with the same request_id is not queued twice)",
                        reason="STORE_UNAVAILABLE") from e
                raise
            self._written = last

    def _write(self, rows: list[tuple[str, str, str]], gone: list[tuple[str, str]]) -> None:
        """One transaction (the caller holds the connection)."""
        if not rows and not gone:
            return
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
        key = (kind, name)
        pending = getattr(self._batch, "pending", None) or {}
        if key in pending:  # this thread's own batch
            doc = pending[key]
            return model.model_validate_json(doc) if doc is not None else None
        self.flush()  # what other threads queued: only what is stored may be read back
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
        try:
            self.flush()
        finally:
            with self._lock:
                self._db.close()
