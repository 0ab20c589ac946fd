"""Durable state in SQLite (WAL): every record the controller keeps, as JSON keyed by (kind, name).

Why synchronous=NORMAL is enough: in WAL mode a commit has been written to the WAL file (write(2)) before it
returns, so it survives the process being killed with SIGKILL; only a power cut can lose the last commits, and an
emulator has no power to cut. That keeps a commit in tens of microseconds instead of an fsync's milliseconds.

Group commit: writes are queued in order and written by whichever waiting thread gets to the database first, all
queued writes in one transaction, so concurrent submissions share a commit. The database therefore always holds a
prefix of the queue, and flush(upto) returns once everything up to a point is in it.

A failed write is never written later (store_drops.py): an error must mean nothing changed.

Checkpoints: a thread of the store's own copies the WAL into the database every CHECKPOINT_S while writes come in.
SQLite's automatic checkpoint ran inside the commit that crossed 1,000 pages, which then took milliseconds instead
of tens of microseconds: half of a commit's mean time in a loop of single-row commits on this VM. A checkpoint
moves what is committed already, so a commit is as durable as before it.

History moves: a commit that moves jobs into the job history (scheduler/purge.py) is written in a transaction of
its own, after everything queued before it, and fails alone (HistoryUnwritable): a damaged page in the history's
table must not fail the queue's writes grouped with it. The job's runner records (job_kinds) move with it.

Stalls and failures: a thread waits at most write_timeout_s for the database (a stalled disk blocks its leader in
the kernel), then fails with Unavailable instead of hanging its RPC. on_health hears when writes start failing and
when they work again (health's NOT_SERVING and SERVING); meanwhile a thread of the store's asks for the rollback
(on_dropped) and tries a write every second: what is queued then, or a probe row.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable

from pydantic import BaseModel

from vipu.errors import Unavailable
from vipu.store_damage import Damaged, DamagedRecords, record_problem
from vipu.store_drops import Dropped, Drops
from vipu.store_generation import Generation, LostLog
from vipu.store_history import HISTORY_KIND, MAX_ROWS_PER_STATEMENT, HistoryReads, history_row
from vipu.store_rebuild import bad_history_rows, damaged_tables, quarantine_history_rows
from vipu.store_request_keys import RequestKeys
from vipu.store_schema import MissingTables, make_tables, migrate, missing_tables

WRITE_TIMEOUT_S = 10.0  # a write waiting longer fails with UNAVAILABLE instead of hanging its RPC
CHECKPOINT_S = 0.5  # how often the WAL is copied into the database while writes come in


class HistoryUnwritable(Unavailable):
    """A move into the job history failed; nothing of it was written, and the other writes go on."""


class Store(Drops, HistoryReads):
    """Implements the domain's Journal: commit() outside a batch is one transaction, durable when it returns."""

    def __init__(self, path: Path, write_timeout_s: float = WRITE_TIMEOUT_S, accept_lost_log: bool = False,
                 remake_tables: bool = False):
        self.path = Path(path)
        self._generation = Generation(self.path)  # store_generation.py: a -wal file lost after a crash
        wal_was_there = self._generation.wal.exists()
        self.write_timeout_s = write_timeout_s
        self.on_health: Callable[[bool], None] = lambda writable: None  # told when writes fail, and work again
        self.on_dropped: Callable[[], None] = self.discard  # undoes failed writes (the controller: rollback.py)
        self.lost_log: LostLog | None = None  # the log loss that accept_lost_log accepted, for the start to say
        self.remade: list[str] = []  # tables that were missing and are made again, empty, for the start to say
        self.job_kinds: frozenset[str] = frozenset()  # runners' records named by a job id: they move with the job
        self._writable = True
        self.outages = 0  # times writing started failing: a rollback says so once per outage (rollback.py)
        self._cause = ""  # why the last write failed (refusal())
        self.write_failures = 0  # writes that failed or timed out since the start (vipu_store_write_failures_total)
        self._retrying = threading.Lock()
        self._closed = threading.Event()
        self.request_keys = RequestKeys(self.path, self._closed)  # which retries may be in the history
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's (module docstring, store_generation.py)
        try:
            migrate(self._db)
            self.remade = missing_tables(self._db)
            # the quarantine only holds records moved aside: empty, it loses nothing more; the others need consent
            if set(self.remade) - {"quarantine"} and not remake_tables:
                raise MissingTables(self.remade)
            make_tables(self._db, self.remade)
            if not wal_was_there:
                try:
                    self._generation.check(self._db)
                except LostLog as e:
                    if not accept_lost_log:
                        raise
                    self.lost_log = e
            self._generation.mark(self._db)
        except BaseException:
            self._db.close()
            raise
        self._lock = threading.Lock()  # the connection; whoever holds it to write is the group's leader
        self._batch = threading.local()  # this thread's open batch: (kind, name) -> doc, or None for a delete
        self._queue_lock = threading.Lock()
        self._queue: list[dict[tuple[str, str], str | None]] = []  # queued writes, oldest first
        self._enqueued = 0  # writes ever queued
        self._written = 0  # of which settled: in the database, or dropped (a prefix)
        self._taken = 0  # the last write in the transaction being written (a stalled one, if it stalls)
        self._failed = False  # a write failed: nothing is written until discard() has dropped the queue
        self._dropped: list[tuple[int, int]] = []  # (first, last) ranges of dropped writes, oldest first
        self._reading = threading.Lock()  # the history's reads, on a connection of their own (WAL: beside writes)
        self._reader: sqlite3.Connection | None = None
        self._checkpointer = threading.Thread(target=self._checkpoints, name="vipu-store-checkpoint", daemon=True)
        self._checkpointer.start()

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
            self._batch.own = self._enqueue(pending) if pending else None

    @property
    def own(self) -> int | None:
        """The number of the write this thread's last batch queued (None: it changed nothing)."""
        return getattr(self._batch, "own", None)

    def commit(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None:
        """Durable when it returns, unless inside a batch (then when the batch is flushed)."""
        changes: dict[tuple[str, str], str | tuple | None] = {key: None for key in deletes}
        changes.update({(kind, name): history_row(record) if kind == HISTORY_KIND else record.model_dump_json()
                        for kind, name, record in puts})
        pending = getattr(self._batch, "pending", None)
        if any(isinstance(doc, tuple) for doc in changes.values()):
            self.request_keys.add((doc[1], doc[5]) for doc in changes.values() if isinstance(doc, tuple))
            self._move(changes, pending)
        elif pending is not None:
            pending.update(changes)
        elif changes:
            own = self._enqueue(changes)
            self.flush(own, own)

    def _move(self, changes: dict, pending: dict | None) -> None:
        """A history move, after every write queued before it (this thread's batch so far included), alone."""
        if pending:
            self._batch.pending = {}
            self._enqueue(pending)
        self.flush()
        if not self._lock.acquire(timeout=self.write_timeout_s):
            raise Unavailable(f"the state store {self.path} has not finished a write in {self.write_timeout_s:g} s;"
                              " ended jobs stay in memory until it has")
        try:
            self._write([(k, n, doc) for (k, n), doc in changes.items() if isinstance(doc, str)],
                        [key for key, doc in changes.items() if doc is None],
                        [doc for doc in changes.values() if isinstance(doc, tuple)])
        except sqlite3.Error as e:
            raise HistoryUnwritable(
                f"the job history of {self.path} cannot be written ({e}): ended jobs stay in memory and the queue"
                " goes on; restart the controller when convenient: its start checks the history and names the fix",
                reason="STORE_UNAVAILABLE") from e
        finally:
            self._lock.release()

    @property
    def enqueued(self) -> int:
        """How many writes have ever been queued: flush(store.enqueued) waits for everything queued so far."""
        return self._enqueued

    def _enqueue(self, changes: dict[tuple[str, str], str | None]) -> int:
        with self._queue_lock:
            self._queue.append(changes)
            self._enqueued += 1
            return self._enqueued

    def flush(self, upto: int | None = None, own: int | None = None, timeout: float | None = None) -> None:
        """Return once the first `upto` queued writes (default: all queued so far) are in the database. The first
        thread to get the connection writes every queued write, its own and others', in one transaction. `own`: the
        caller's own write; Dropped if it was dropped (it never will be written), Unavailable if that is not known.
        `timeout`: wait less than write_timeout_s (an RPC's caller has a deadline)."""
        upto = self._enqueued if upto is None else upto
        if self._written >= upto:
            self._verdict(own)
            return
        wait = self.write_timeout_s if timeout is None else max(0.0, min(timeout, self.write_timeout_s))
        if not self._lock.acquire(timeout=wait):
            self.write_failures += 1
            self._health(False)  # a write has taken longer than the timeout: a stalled disk, or a lock held
            self._timed_out(own, wait)
        try:
            if self._written >= upto:
                self._verdict(own)  # a leader wrote ours while we waited, or it was dropped
                return
            if self._failed:
                raise Dropped(self._refusal(self._cause), reason="STORE_UNAVAILABLE")
            with self._queue_lock:
                queued = list(self._queue)
                last = self._taken = self._enqueued
            merged: dict[tuple[str, str], str | tuple | None] = {}
            for changes in queued:
                merged.update(changes)
            try:
                self._write([(k, n, doc) for (k, n), doc in merged.items() if isinstance(doc, str)],
                            [key for key, doc in merged.items() if doc is None],
                            [doc for doc in merged.values() if isinstance(doc, tuple)])
            except BaseException as e:
                self._failed = True  # kept queued, written never: discard() drops them with those queued since
                self.write_failures += 1
                self._health(False)
                if isinstance(e, sqlite3.Error):  # disk full, I/O error: a retry may succeed, so not INTERNAL
                    raise Dropped(self._refusal(str(e)), reason="STORE_UNAVAILABLE") from e
                raise
            with self._queue_lock:
                del self._queue[:len(queued)]
            self._written = last
        finally:
            self._lock.release()
        self._health(not self._failed)  # (failed: a waiter timed out, and what it left waits for discard())

    def _checkpoints(self) -> None:
        """Every CHECKPOINT_S, if anything was written since the last time, a passive checkpoint (it waits for no
        writer) on a connection of its own."""
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            done = self._written
            while not self._closed.wait(CHECKPOINT_S):
                if self._written != done:
                    done = self._written
                    try:
                        with self._lock:
                            generation = self._generation.ahead(self._db)
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                        with self._lock:
                            self._generation.reached(self._db, generation)
                    except (sqlite3.Error, OSError):
                        pass  # tried again next time; a failing disk shows in the writes' own health
        finally:
            db.close()

    def _write(self, rows: list[tuple[str, str, str]], gone: list[tuple[str, str]], history: list[tuple]) -> None:
        """One transaction (the caller holds the connection)."""
        if not rows and not gone and not history:
            return
        if not gone and not history and len(rows) <= MAX_ROWS_PER_STATEMENT:
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
            if history:
                self._db.executemany("INSERT OR REPLACE INTO job_history (id, user, array_job_id, state, ended,"
                                     " request_id, doc) VALUES (?, ?, ?, ?, ?, ?, ?)", history)
                self._move_job_records([row[0] for row in history])
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _move_job_records(self, ids: list[int]) -> None:
        """The runners' records of these jobs, from the live records into the history's (inside _write)."""
        if not self.job_kinds:
            return
        kinds = sorted(self.job_kinds)
        marks = ", ".join("?" * len(kinds))
        names = [(i, *kinds, str(i)) for i in ids]
        self._db.executemany(f"INSERT OR REPLACE INTO job_history_records (id, kind, doc) SELECT ?, kind, doc FROM"
                             f" records WHERE kind IN ({marks}) AND name = ?", names)
        self._db.executemany(f"DELETE FROM records WHERE kind IN ({marks}) AND name = ?", [n[1:] for n in names])

    def damaged_tables(self) -> list[tuple[str, str]]:
        """(table, what SQLite found) for each history table whose pages do not check out (store_rebuild.py)."""
        with self._lock:
            return damaged_tables(self._db)

    def bad_history_rows(self, decode: bool) -> list[tuple[int, str]]:
        """(id, why) of each history row whose record cannot be read (store_rebuild.py)."""
        with self._lock:
            return bad_history_rows(self._db, decode)

    def quarantine_history(self, rows: list[tuple[int, str]], now: float) -> None:
        """Move these history rows (id, why) into the quarantine table, as they were."""
        with self._lock:
            quarantine_history_rows(self._db, rows, now)

    def load(self, kinds: dict[str, type[BaseModel]], names: bool = False) -> list[tuple]:
        """Every stored record of the given kinds, parsed, as (kind, record), or (kind, name, record) with `names`;
        unknown kinds are left for the part that owns them. DamagedRecords names every record that does not parse
        (none is skipped silently)."""
        wanted = sorted(kinds)  # others (a job's run records) are never read at start: they grow with the history
        with self._lock:  # doc as bytes: one record of bytes that are not UTF-8 must not fail the whole read
            rows = self._db.execute(f"SELECT kind, name, CAST(doc AS BLOB) FROM records WHERE kind IN"
                                    f" ({', '.join('?' * len(wanted))}) ORDER BY kind, name", wanted).fetchall()
        loaded, damaged = [], []
        for kind, name, doc in rows:
            if kind not in kinds:
                continue
            record = record_problem(doc, kinds[kind])
            if isinstance(record, str):
                damaged.append(Damaged(kind, name, record))
            else:
                loaded.append((kind, name, record) if names else (kind, record))
        if damaged:
            raise DamagedRecords(damaged)
        return loaded

    def quarantine(self, damaged: Iterable[Damaged], now: float) -> None:
        """Move records out of the way into the quarantine table, kept as they were for inspection."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for x in damaged:
                    self._db.execute(
                        "INSERT INTO quarantine (kind, name, doc, error, moved) SELECT kind, name, doc, ?, ? FROM"
                        " records WHERE kind = ? AND name = ?", (x.error, now, x.kind, x.name))
                    self._db.execute("DELETE FROM records WHERE kind = ? AND name = ?", (x.kind, x.name))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def quarantined(self, kinds: Iterable[str]) -> list[tuple[str, str]]:
        """(name, error) of the records of these kinds in the quarantine table."""
        kinds = list(kinds)
        with self._lock:
            return self._db.execute(f"SELECT name, min(error) FROM quarantine WHERE kind IN"
                                    f" ({', '.join('?' * len(kinds))}) GROUP BY name", kinds).fetchall()

    def get(self, kind: str, name: str, model: type[BaseModel]) -> BaseModel | None:
        key = (kind, name)
        pending = getattr(self._batch, "pending", None) or {}
        if key in pending:  # this thread's own batch
            doc = pending[key]
            return model.model_validate_json(doc) if doc is not None else None
        self.flush()  # what other threads queued: only what is stored may be read back
        with self._lock:
            row = self._db.execute("SELECT doc FROM records WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        if row is None and kind in self.job_kinds and name.isdigit():  # the job moved to the history
            row = next(iter(self._read("SELECT doc FROM job_history_records WHERE id = ? AND kind = ?",
                                       [int(name), kind], flush=False)), None)
        return model.model_validate_json(row[0]) if row else None

    def get_meta(self, key: str) -> object | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: object) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def close(self) -> None:
        self._closed.set()
        try:
            if not self._failed:
                self.flush()  # what failed is never written, also not at the end
        except Unavailable:
            pass  # refused to its callers already, or (a timeout) told them it is not known
        finally:
            self._checkpointer.join(timeout=self.write_timeout_s)
            with self._lock:
                self._db.close()  # the last connection: SQLite checkpoints the rest of the WAL
            with self._reading:
                if self._reader is not None:
                    self._reader.close()
            self._generation.closed()
