"""The job history's reads (`vipu history`, `vipu show job` and request-id retries of purged jobs, and a start's
look for ids in no table), part of the Store.

Why a connection of their own: a listing over hundreds of thousands of stored jobs must hold up no write; in WAL
mode a reader runs beside the writer. A damaged history page fails the read with UNAVAILABLE, not the queue.

Why a thread of their own (store_thread.py): on a stalled disk a read blocks in the kernel too (it writes its read
mark into the -shm file). The caller waits at most READ_WAIT_S and answers UNAVAILABLE, saying the live queue still
answers; while that read is stuck, the next ones answer so at once. The history is not answered from memory: most
of it is only on disk, and a listing that left it out without a word would be wrong.
"""

from __future__ import annotations

import json
import sqlite3
import time
from concurrent.futures import TimeoutError as Late
from typing import Iterable

from vipu.errors import Unavailable
from vipu.store_thread import StoreThread

HISTORY_KIND = "job_history"  # records of this kind go to the job_history table, with the columns its reads use
MAX_ROWS_PER_STATEMENT = 1000  # 3 bound values a row, well under SQLite's 32,766 variables per statement
MAX_MARKS = 1000  # a filter list longer than this is bound as one JSON array (_among)
READ_WAIT_S = 5.0  # a history read waits this long for the disk (write_timeout_s if less), then answers UNAVAILABLE


class HistoryReads:
    """Mixed into the Store, whose path, flush(), write queue and batch these read."""

    def history_keys(self, users: Iterable[str] = (), ids: Iterable[int] = (), states: Iterable[str] = (),
                     since: float | None = None) -> list[tuple[float, int]]:
        """(ended, id) of the history's jobs, in that order: of these users, ids (an array job's id: its tasks) and
        states, ended at or after `since`. Read on a connection of its own, so a long listing holds up no write."""
        where, args = [], []
        for column, values in (("user", list(users)), ("state", list(states))):
            if values:
                where.append(_among(column, values, args))
        ids = list(ids)
        if ids:
            where.append(f"({_among('id', ids, args)} OR {_among('array_job_id', ids, args)})")
        if since is not None:
            where.append("ended >= ?")
            args.append(since)
        sql = "SELECT ended, id FROM job_history" + (" WHERE " + " AND ".join(where) if where else "")
        return self._read(sql + " ORDER BY ended, id", args)

    def history_users(self, users: list[str]) -> set[str]:
        """Those of `users` with a job in the history, in one read (one read a name held an RPC 34 s for 200,000)."""
        if not users:
            return set()
        args: list = []
        sql = f"SELECT DISTINCT user FROM job_history WHERE {_among('user', users, args)}"
        return {user for (user,) in self._read(sql, args)}

    def history_docs(self, ids: Iterable[int]) -> dict[int, str]:
        """id -> the stored record, for those of `ids` in the history."""
        ids = list(ids)
        out: dict[int, str] = {}
        for at in range(0, len(ids), MAX_ROWS_PER_STATEMENT):
            chunk = ids[at:at + MAX_ROWS_PER_STATEMENT]
            out.update(self._texts(self._read(
                f"SELECT id, CAST(doc AS BLOB) FROM job_history WHERE id IN ({', '.join('?' * len(chunk))})", chunk)))
        return out

    def history_requests(self, user: str, request_id: str) -> list[tuple[int, str]]:
        """(id, record) of the history's jobs that this user submitted with this request id. Called by every submit
        with a request id, under the controller's lock: so it waits for no write (a flush there would serialise
        every submission), and looks in the writes still queued as well as in the database; but not at all for a
        pair the history has never held (store_request_keys.py)."""
        if not self.request_keys.may_hold(user, request_id):
            return []
        queued: dict[int, str] = {}
        with self._queue_lock:
            for changes in [*(c for _, c in self._queue), getattr(self._batch, "pending", None) or {}]:
                for (kind, _), row in changes.items():
                    if kind == HISTORY_KIND and isinstance(row, tuple) and (row[1], row[5]) == (user, request_id):
                        queued[row[0]] = row[6]
        stored = self._texts(self._read("SELECT id, CAST(doc AS BLOB) FROM job_history WHERE user = ? AND request_id"
                                        " = ? ORDER BY id", [user, request_id], flush=False))
        return sorted({**dict(stored), **queued}.items())

    def highest_history_id(self) -> int:
        """The highest job id the history or its quarantine holds (0: none), for job ids to go on after."""
        rows = self._read("SELECT max(id) FROM job_history UNION ALL SELECT max(CAST(name AS INTEGER)) FROM quarantine"
                          " WHERE kind IN ('job', 'job_history') AND name GLOB '[0-9]*'", [], flush=False)
        return max([0] + [i for (i,) in rows if i is not None])

    def history_count(self) -> int:
        """How many jobs the history holds (read from its smallest index, not its records)."""
        return self._read("SELECT count(*) FROM job_history", [], flush=False)[0][0]

    def history_ids(self, below: int) -> set[int]:
        """The ids of the history's jobs below `below`."""
        return {i for (i,) in self._read("SELECT id FROM job_history WHERE id < ?", [below], flush=False)}

    def name_lost_jobs(self, ids: list[int], error: str, now: float) -> None:
        """List these job ids in the quarantine table as lost (`error` says how), with no record: a start's, before
        anything else writes."""
        def insert() -> None:
            self._db.execute("BEGIN IMMEDIATE")  # one transaction: a lost history may be thousands of ids
            try:
                self._db.executemany("INSERT INTO quarantine (kind, name, doc, error, moved) VALUES ('job', ?, '',"
                                     " ?, ?)", [(str(i), error, now) for i in ids])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

        self._writer.call(insert)  # (only the writing thread uses that connection: store_thread.py)

    def _texts(self, rows: list[tuple[int, bytes]]) -> list[tuple[int, str]]:
        """(id, record) from (id, its bytes). Why bytes: SQLite's own decoding fails the whole read on one record
        that is not UTF-8, with an error that quotes its bytes; this names the row and the fix instead."""
        out = []
        for i, doc in rows:
            try:
                out.append((i, doc.decode()))
            except UnicodeDecodeError:
                raise Unavailable(f"job {i} in the job history of {self.path} is damaged (its bytes are not UTF-8"
                                  " text); restart the controller once with --quarantine-bad-records to move it"
                                  " aside", reason="STORE_UNAVAILABLE") from None
        return out

    def _read(self, sql: str, args: list, flush: bool = True) -> list:
        wait = min(self.write_timeout_s, READ_WAIT_S)
        if flush and self._writable:
            try:
                self.flush(timeout=wait)  # what was queued before this read is in it
            except Unavailable:
                pass  # a store that cannot write still answers reads, with what it holds
        with self._settle:
            if self._reads is None:
                self._reads = StoreThread("vipu-store-reader")
        began = self._reads.busy_since()
        # an earlier read waits for the disk: one that ran when a caller gave up on it, or longer than a wait
        if began is not None and (began <= self._read_given_up_at or self._reads.busy_for() > wait):
            raise self._unreadable(self._reads.busy_for())
        done = self._reads.submit(lambda: self._execute(sql, args))
        try:
            return done.result(timeout=wait)
        except Late:
            self._read_given_up_at = time.monotonic()
            done.cancel()
            raise self._unreadable(wait) from None

    def _unreadable(self, waited: float) -> Unavailable:
        """A read the disk did not answer in time: health says NOT_SERVING at once, and changes are refused. Were it
        a long listing on a busy machine instead of a stalled disk, the retry thread's first write says SERVING
        again within a second."""
        self._cause = f"no read of the job history finished in {waited:.3g} s: a stalled disk"
        self._health(False)
        return Unavailable(f"the state store {self.path} has not answered a read of the job history in {waited:.3g} s"
                           " (a stalled disk), so this was not done; the live queue still answers (`vipu queue`):"
                           " retry once health says SERVING", reason="STORE_UNAVAILABLE")

    def _execute(self, sql: str, args: list) -> list:
        """On the reading thread."""
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, check_same_thread=False)
        try:
            return self._reader.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as e:  # a damaged history page: the live queue still answers
            raise Unavailable(f"the job history of {self.path} cannot be read ({e}); restart the controller: its"
                              " start checks the history and names the fix", reason="STORE_UNAVAILABLE") from e


def history_row(job) -> tuple:
    """A job_history row: the columns `vipu history` filters on, then the whole record."""
    return (job.id, job.user, job.array_job_id, job.state.value, job.end_time, job.request_id, job.model_dump_json())


def _among(column: str, values: list, args: list) -> str:
    """`column IN (...)` for a read's WHERE, its values added to `args`. A list of up to MAX_MARKS values is a mark
    a value: the planner then knows its length, and for one user reads the (user, ended) index in order; bound as a
    JSON array it sorted that user's rows, and once ANALYZE's statistics were there it scanned the whole history in
    ended order instead (100 ms for 5 rows of 200,000). A longer one is one JSON array: a mark a value passed
    SQLite's limit of bound values at ~125,000 ids, and the read failed as if the history were damaged."""
    if len(values) <= MAX_MARKS:
        args += values
        return f"{column} IN ({', '.join('?' * len(values))})"
    args.append(json.dumps(values))
    return f"{column} IN (SELECT value FROM json_each(?))"
