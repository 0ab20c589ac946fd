"""Durable state in SQLite (WAL): every record the controller keeps, as JSON keyed by (kind, name).

Why synchronous=NORMAL is enough: in WAL mode a commit has been written to the WAL file (write(2)) before it
returns, so it survives the process being killed with SIGKILL; only a power cut can lose the last commits, and an
emulator has no power to cut. That keeps a commit in tens of microseconds instead of an fsync's milliseconds.

Group commit: writes are queued in order and written by a thread of the store's own (store_thread.py), all queued
writes in one transaction, so concurrent submissions share a commit. The database therefore always holds a prefix of
the queue, and flush(upto) returns once everything up to a point is in it. Only that thread uses the connection
that writes; the job history is read on a connection and a thread of its own (store_history.py).

A failed write is never written later (store_drops.py): an error must mean nothing changed.

Checkpoints: a thread of the store's own copies the WAL into the database every CHECKPOINT_S while writes come in.
SQLite's automatic checkpoint ran inside the commit that crossed 1,000 pages, which then took milliseconds instead
of tens of microseconds: half of a commit's mean time in a loop of single-row commits on this VM. A checkpoint
moves what is committed already, so a commit is as durable as before it.

History moves: a commit that moves jobs into the job history (scheduler/purge.py) is written in a transaction of
its own, after everything queued before it, and fails alone (HistoryUnwritable): a damaged page in the history's
table must not fail the queue's writes grouped with it. The job's runner records (job_kinds) move with it.

Stalls and failures (store_stalls.py). What is guaranteed:
- A write a caller was told is stored is in the database: it was committed before the caller was told.
- A caller waits at most write_timeout_s for its write (less if its RPC's deadline is nearer), then answers
  UNAVAILABLE. Its change was dropped if it was still queued behind the stuck write: it is undone, never written.
  It is not known until the disk answers if it was inside the stuck write: the answer says to check first.
- From that moment the store is not writable: health says NOT_SERVING, changes are refused before they begin, and
  the controller's memory is rebuilt from the records the last finished write left (store_copy.py: no disk read).
- When the stuck write ends, the memory is rebuilt again from what it left, and the log names the jobs it held.
- Reads of the live queue answer from memory throughout; the job history's reads wait at most READ_WAIT_S.
- close() waits at most write_timeout_s for the disk, and says whether it answered.
on_health hears when writes stop and work again; meanwhile a thread of the store's asks for the rollback
(on_dropped) and tries a write every second.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from concurrent.futures import TimeoutError as Late
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable

from pydantic import BaseModel

from vipu.errors import Unavailable
from vipu.store_copy import StoredCopy
from vipu.store_damage import Damaged, DamagedRecords, record_problem
from vipu.store_drops import Dropped, Drops
from vipu.store_generation import Generation, LostLog
from vipu.store_history import HISTORY_KIND, MAX_ROWS_PER_STATEMENT, HistoryReads, history_row
from vipu.store_repairs import Repairs
from vipu.store_request_keys import RequestKeys
from vipu.store_schema import MissingTables, make_tables, migrate, missing_tables
from vipu.store_stalls import Stalls
from vipu.store_thread import StoreThread

WRITE_TIMEOUT_S = 10.0  # a write waiting longer fails with UNAVAILABLE instead of hanging its RPC
CHECKPOINT_S = 0.5  # how often the WAL is copied into the database while writes come in


class HistoryUnwritable(Unavailable):
    """A move into the job history failed; nothing of it was written, and the other writes go on."""


class Store(Drops, Stalls, HistoryReads, Repairs):
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
            lost = self._generation.how_lost(self._db, wal_was_there)  # before anything writes to the -wal file
            migrate(self._db)
            self.remade = missing_tables(self._db)
            # the quarantine only holds records moved aside: empty, it loses nothing more; the others need consent
            if set(self.remade) - {"quarantine"} and not remake_tables:
                raise MissingTables(self.remade)
            make_tables(self._db, self.remade)
            self.lost_log = self._generation.accepted_loss(self._db, lost, accept_lost_log)
            self._generation.mark(self._db)
        except BaseException:
            self._db.close()
            raise
        self._batch = threading.local()  # this thread's open batch: (kind, name) -> doc, or None for a delete
        self._queue_lock = threading.Lock()
        self._settle = threading.Condition(self._queue_lock)  # told when writes are settled (written or dropped)
        self._queue: list[tuple[int, dict[tuple[str, str], str | None]]] = []  # (number, write), oldest first
        self._enqueued = 0  # writes ever queued
        self._written = 0  # of which settled: in the database, dropped, or in a stuck transaction (a prefix)
        self._asked = False  # a write of what is queued is queued on the writing thread
        self._taking: tuple[int, int] | None = None  # (first, last) write in the transaction being written
        self._taking_keys: Iterable[tuple[str, str]] = ()  # the records it changes (its jobs said if it stalls)
        self._abandoned: list[str] | None = None  # its jobs, once a caller stopped waiting for it (store_stalls.py)
        self._failed = False  # a write failed: nothing is written until discard() has dropped the queue
        self._dropped: list[tuple[int, int]] = []  # (first, last) ranges of dropped writes, oldest first
        self._copy: StoredCopy | None = None  # what the records table holds, from the first load() on
        self._writer = StoreThread("vipu-store-writer")  # the only user of self._db from here on
        self._reads: StoreThread | None = None  # the history's, on a connection of their own (made by a first read)
        self._read_given_up_at = float("-inf")  # time.monotonic() when a caller last stopped waiting for a read
        self._reader: sqlite3.Connection | None = None
        self._probing = None  # the probe write queued while the store cannot write (store_drops.py)
        self._checkpointer = threading.Thread(target=self._checkpoints, name="vipu-store-checkpoint", daemon=True)
        self._checkpointer.start()
        threading.Thread(target=self._watch, name="vipu-store-watch", daemon=True).start()  # store_stalls.py

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
        deadline = time.monotonic() + self.write_timeout_s  # (the loop holds the state lock meanwhile)
        self.flush()
        rows, gone, history = _split(changes)
        moved = [str(row[0]) for row in history]
        done = self._writer.submit(lambda: self._transaction(rows, gone, history, None))
        try:
            done.result(timeout=max(0.0, deadline - time.monotonic()))
        except Late:
            if not done.cancel():
                self._stalled_in(moved)
            raise Unavailable(f"the state store {self.path} has not finished a write in {self.write_timeout_s:g} s;"
                              " ended jobs stay in memory until it has", reason="STORE_UNAVAILABLE") from None
        except sqlite3.Error as e:
            raise HistoryUnwritable(
                f"the job history of {self.path} cannot be written ({e}): ended jobs stay in memory and the queue"
                " goes on; restart the controller when convenient: its start checks the history and names the fix",
                reason="STORE_UNAVAILABLE") from e

    @property
    def enqueued(self) -> int:
        """How many writes have ever been queued: flush(store.enqueued) waits for everything queued so far."""
        return self._enqueued

    def _enqueue(self, changes: dict[tuple[str, str], str | None]) -> int:
        with self._settle:
            self._enqueued += 1
            self._queue.append((self._enqueued, changes))
            if not self._asked:
                self._asked = True
                self._writer.submit(self._write_queued)
            return self._enqueued

    def flush(self, upto: int | None = None, own: int | None = None, timeout: float | None = None) -> None:
        """Return once the first `upto` queued writes (default: all queued so far) are in the database. `own`: the
        caller's own write; Dropped if it was dropped (it never will be written), Unavailable if that is not known.
        `timeout`: wait less than write_timeout_s (an RPC's caller has a deadline)."""
        wait = self.write_timeout_s if timeout is None else max(0.0, min(timeout, self.write_timeout_s))
        deadline = time.monotonic() + wait
        with self._settle:
            upto = self._enqueued if upto is None else upto
            while self._written < upto and not self._failed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._settle.wait(left)
            if self._written >= upto or self._failed:
                self._verdict(own)  # written, or dropped, or in a stuck transaction
                if self._written < upto:
                    raise Dropped(self._refusal(self._cause), reason="STORE_UNAVAILABLE")
                if own is None or self._writable or self._failed:
                    return
                late = None  # the caller's own write worked: the store writes again
            else:
                late = self._timed_out(own, wait)
        self._health(late is None)  # (timed out: a stalled disk)
        if late is not None:
            raise late

    def _write_queued(self) -> None:
        """On the writing thread: everything queued, in one transaction."""
        with self._settle:
            self._asked = False
            if self._failed or not self._queue:
                return  # (failed: nothing is written until discard() has dropped what is queued)
            queued = list(self._queue)
            merged: dict[tuple[str, str], str | tuple | None] = {}
            for _, changes in queued:
                merged.update(changes)
            self._taking = taking = (queued[0][0], queued[-1][0])
            self._taking_keys = merged.keys()  # (its jobs worked out only if it stalls: store_stalls.py)
        self._transaction(*_split(merged), taking)

    def _transaction(self, rows: list, gone: list, history: list, taking: tuple[int, int] | None) -> None:
        """On the writing thread: write, and settle what it wrote (`taking`: those queued writes; None: a move)."""
        try:
            self._write(rows, gone, history)
        except BaseException as e:  # noqa: BLE001 - a disk error or a bug: either way this write is not stored
            self._settled(taking, rows, gone, history, e)
            if taking is None:
                raise  # a move's caller hears it (HistoryUnwritable)
            return
        self._settled(taking, rows, gone, history, None)

    def _checkpoints(self) -> None:
        """Every CHECKPOINT_S, if anything was written since the last time, a passive checkpoint (it waits for no
        writer) on a connection of its own; the generation marks around it are the writing thread's."""
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            done = self._written
            while not self._closed.wait(CHECKPOINT_S):
                if self._written != done and self._writable:
                    done = self._written
                    try:
                        generation = self._writer.submit(lambda: self._generation.ahead(self._db)).result(
                            timeout=self.write_timeout_s)
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                        self._writer.submit(lambda: self._generation.reached(self._db, generation))
                    except (sqlite3.Error, OSError, Late):
                        pass  # tried again next time; a failing disk shows in the writes' own health
        finally:
            db.close()

    def _write(self, rows: list[tuple[str, str, str]], gone: list[tuple[str, str]], history: list[tuple]) -> None:
        """One transaction (on the writing thread)."""
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

    def load(self, kinds: dict[str, type[BaseModel]], names: bool = False) -> list[tuple]:
        """Every stored record of the given kinds, parsed, as (kind, record), or (kind, name, record) with `names`;
        unknown kinds are left for the part that owns them. DamagedRecords names every record that does not parse
        (none is skipped silently). Read from the database once, then from its copy (store_copy.py)."""
        if self._copy is None:
            self._writer.call(self._read_copy)
        with self._settle:
            rows = self._copy.rows(kinds)
        loaded, damaged = [], []
        for kind, name, doc in rows:
            record = record_problem(doc, kinds[kind])
            if isinstance(record, str):
                damaged.append(Damaged(kind, name, record))
            else:
                loaded.append((kind, name, record) if names else (kind, record))
        if damaged:
            raise DamagedRecords(damaged)
        return loaded

    def _read_copy(self) -> None:
        """On the writing thread: the records table, copied (doc as bytes: one record of bytes that are not UTF-8
        must not fail the whole read)."""
        if self._copy is None:
            rows = self._db.execute("SELECT kind, name, CAST(doc AS BLOB) FROM records").fetchall()
            with self._settle:
                self._copy = StoredCopy(rows)

    def get(self, kind: str, name: str, model: type[BaseModel]) -> BaseModel | None:
        key = (kind, name)
        pending = getattr(self._batch, "pending", None) or {}
        if key in pending:  # this thread's own batch
            doc = pending[key]
            return model.model_validate_json(doc) if doc is not None else None
        if self._writable:
            try:
                self.flush()  # what other threads queued: only what is stored may be read back
            except Unavailable:
                pass  # a store that cannot write still answers reads, with what it holds
        if self._copy is None:
            self._writer.call(self._read_copy)
        with self._settle:
            doc = self._copy.get(kind, name)
        if doc is None and kind in self.job_kinds and name.isdigit():  # the job moved to the history
            doc = next(iter(self._read("SELECT doc FROM job_history_records WHERE id = ? AND kind = ?",
                                       [int(name), kind], flush=False)), (None,))[0]
        return model.model_validate_json(doc) if doc is not None else None

    def get_meta(self, key: str) -> object | None:
        row = self._writer.call(lambda: self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone())
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: object) -> None:
        self._writer.call(lambda: self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                                   (key, json.dumps(value))))

    def close(self) -> bool:
        """Write what is queued and close. Waits at most write_timeout_s for the disk: False if it did not answer
        (a stalled disk), the writing thread then left stuck in the kernel. Either way every write a caller was
        told is stored was stored before it was told."""
        self._closed.set()
        deadline = time.monotonic() + self.write_timeout_s
        try:
            if not self._failed:
                self.flush()  # what failed is never written, also not at the end
        except Unavailable:
            pass  # refused to its callers already, or (a timeout) told them it is not known

        def last() -> None:
            self._db.close()  # the last connection: SQLite checkpoints the rest of the WAL
            self._generation.closed()

        closed = self._writer.finish(last, max(0.0, deadline - time.monotonic()))
        self._checkpointer.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._reads is not None:
            self._reads.finish(lambda: self._reader is not None and self._reader.close(),
                               max(0.0, deadline - time.monotonic()))
        return closed


def _split(changes: dict) -> tuple[list, list, list]:
    """A write's (kind, name) -> change as the rows to put, the keys to delete and the history rows to add."""
    return ([(k, n, doc) for (k, n), doc in changes.items() if isinstance(doc, str)],
            [key for key, doc in changes.items() if doc is None],
            [doc for doc in changes.values() if isinstance(doc, tuple)])
