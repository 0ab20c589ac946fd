"""Which (user, request id) pairs the job history may hold, in memory: part of the Store (store_history.py).

Why: every submission with a request id (the CLI sends one with each) asks whether an earlier submit with that id
has moved into the history (a retry of a job that ended and left memory): an indexed read of SQLite for each,
under the state lock (6-9 us of CPU on this project's VM, against under 1 us here). One bit per pair's hash (a
Bloom filter with one hash) answers "never used" without a read; a bit that is set, by this pair or another, sends
the question to SQLite as before. So an answer of "not there" is exact, and a false "maybe" costs only the read it
always was. 2 MiB of bits: at a million history jobs about one question in seventeen still reads SQLite.

The bits are of the history as read once in a thread (started by the first question; until it has read every
row, questions go to SQLite; 200,000 rows take about 0.2 s), and of every pair moved in since, added before the
move is written.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable

BITS = 1 << 24
ROWS_A_READ = 10_000


class RequestKeys:
    def __init__(self, path: Path, closed: threading.Event):
        self._bits = bytearray(BITS // 8)
        self._lock = threading.Lock()  # a set bit is a read, an or and a write: two at once could lose one
        self._path, self._closed = path, closed
        self._loader: threading.Thread | None = None
        self._ready = False

    def add(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        """(user, request id) pairs the history holds or is about to: those with a request id."""
        with self._lock:
            bits = self._bits
            for pair in pairs:
                if pair[1] is not None:
                    h = hash(pair) & (BITS - 1)
                    bits[h >> 3] |= 1 << (h & 7)

    def may_hold(self, user: str, request_id: str) -> bool:
        """False only if the history holds no job of this user with this request id."""
        if not self._ready:
            if self._loader is None:
                self._loader = threading.Thread(target=self._load, name="vipu-store-request-keys", daemon=True)
                self._loader.start()
            return True
        h = hash((user, request_id)) & (BITS - 1)
        return bool(self._bits[h >> 3] & (1 << (h & 7)))

    def _load(self) -> None:
        """Every pair the history holds, read on a connection of its own (WAL: beside the writes). A history that
        cannot be read leaves every question to SQLite, whose read then says what is wrong."""
        try:  # read-only: a store closed and its file removed meanwhile must not be made again, empty
            db = sqlite3.connect(f"{Path(self._path).absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            rows = db.execute("SELECT user, request_id FROM job_history WHERE request_id IS NOT NULL")
            while not self._closed.is_set():
                chunk = rows.fetchmany(ROWS_A_READ)
                if not chunk:
                    self._ready = True
                    return
                self.add(chunk)
        except sqlite3.Error:
            return
        finally:
            db.close()
