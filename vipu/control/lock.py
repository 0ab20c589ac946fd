"""The one lock around the controller's state, and the store transaction each holding of it is.

Why group commit: everything committed while the lock is held is queued as one write when it is released, and the
releasing thread goes on only once every write queued until then, its own and those it could have seen, is in the
store. So an RPC never answers with anything a SIGKILL could take back, and the next thread can work while the
store's own thread writes: it writes what queued meanwhile in the same commit. The releasing thread waits with a
timeout (_answer_in), so a stalled disk is said in the answer, never a hung RPC.

Why a change refused is undone: a write that fails is never written later (store.py), so the thread whose write
was dropped has the memory rebuilt from what the database holds (rollback.py) before it answers UNAVAILABLE; and
while the store cannot write, a client's change is refused before it touches anything (changing()).

Why a version: every release of the lock may have changed the state, so it counts one up; a read snapshot taken
at a version is current until the next release (snapshot.py), and readers at the same version share it.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from vipu.control.callers import current
from vipu.errors import Unavailable
from vipu.store import Dropped, Store

log = logging.getLogger("vipu.store")
ANSWER_MARGIN_S = 0.5  # an RPC waits for the store until this long before its caller's deadline, then answers
MIN_WAIT_S = 5.0  # but never less: a busy store is no failure, and a short deadline must not make it one


def _answer_in() -> float | None:
    """How long the RPC this thread serves may wait for the store (Store.write_timeout_s at most): a stalled disk
    is then said in the answer, before the caller's deadline turns it into "did not answer in time"."""
    call = current()
    if call is None or call.answer_by is None:
        return None
    return max(MIN_WAIT_S, call.answer_by - time.monotonic() - ANSWER_MARGIN_S)


class StateLock:
    def __init__(self, store: Store):
        self._lock = threading.Lock()
        self._store = store
        self._batch = None
        self.version = 0  # counts releases: the state may differ after each
        self.last_write = 0.0  # time.monotonic() at the last release (pacing.py)

    def __enter__(self) -> "StateLock":
        self._lock.acquire()
        self._batch = self._store.batch()
        self._batch.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        batch, self._batch = self._batch, None
        try:
            batch.__exit__(*exc)
        finally:
            self.version += 1
            self.last_write = time.monotonic()
            seen, own = self._store.enqueued, self._store.own
            self._lock.release()
        try:
            self._store.flush(seen, own, _answer_in())
        except Dropped:
            self._store.on_dropped()  # undone in memory before the caller answers that nothing changed
            if own is not None:
                raise
        except Unavailable:
            if own is not None:
                raise  # (a holding that changed nothing, a key's lookup say, answers as a read does)

    @contextmanager
    def changing(self) -> Iterator["StateLock"]:
        """The lock for a client's change: refused before it touches anything while the store cannot write."""
        if not self._store.writable:
            raise Unavailable(self._store.refusal(), reason="STORE_UNAVAILABLE")
        with self:
            yield self

    @contextmanager
    def undoing(self) -> Iterator["StateLock"]:
        """The lock for a rollback: its own writes (what the rebuild found to record) stay queued, written by the
        store's retry or the next write; flushing them here would fail into another rollback."""
        with self._lock:
            with self._store.batch():
                yield self
            self.version += 1
            self.last_write = time.monotonic()

    @contextmanager
    def reading(self) -> Iterator[int]:
        """Hold the lock only to copy what a read needs (no store transaction); yields the version being read.
        On leaving, waits until what the copy saw is durable, so a read never shows what a crash could undo.

        Except while the store cannot write (a full or stalled disk): then reads answer from memory at once. What
        they show beyond the store is what writes the store's own thread could not make yet (a rollback's
        records): a change refused UNAVAILABLE is undone before any read (store.failed)."""
        if self._store.failed:
            self._store.on_dropped()
        with self._lock:
            version = self.version
            seen, settled = self._store.enqueued, self._store.settled
            yield version
        if self._store.writable:
            try:
                self._store.flush(seen, timeout=_answer_in())
            except Dropped:
                self._store.on_dropped()
                raise Undone() from None
            except Unavailable:
                pass
        if self._store.dropped_since(settled, seen):  # (undone under the lock: the next copy is of the rebuilt state)
            raise Undone()


class Undone(Exception):
    """What a read copied was undone before it answered (a write it waited for failed): copy again."""


class Recording:
    """The lock as a run's thread holds it to record what happened to the run (it ended, its record): a write the
    store drops is undone as any other (rollback.py treats the job as a restart would), and the thread goes on."""

    def __init__(self, lock: StateLock):
        self._lock = lock

    def __enter__(self) -> StateLock:
        return self._lock.__enter__()

    def __exit__(self, *exc) -> None:
        try:
            self._lock.__exit__(*exc)
        except Dropped as e:
            log.warning("what a run reported was undone: %s", e)
        except Unavailable as e:  # in a write that stalled: settled when it ends (store_stalls.py)
            log.warning("what a run reported is not known to be stored yet: %s", e)
