"""What the Store does when a write fails, part of the Store: the failed write and those queued after it are
dropped, never written later, and the controller undoes them (control/rollback.py).

Why drop rather than keep a failed write for the next one: an error must mean nothing changed. A kept write was
stored by whatever write came next, so a request answered UNAVAILABLE took effect later, and a client that retried
as told, with a new request id (the CLI makes one per run), had it twice.

Why everything queued after it goes too: those writes were made on top of it in memory (a job's cancel after its
submit). Until discard() has dropped them, under the controller's state lock, nothing is written. A waiter learns
whether its own write was dropped (Dropped), or, waiting past the timeout for a leader stuck in the kernel, whether
its write is in that stuck transaction (then it is not known yet) or not (then it is dropped).
"""

from __future__ import annotations

import json
import sqlite3
import threading

from vipu.errors import Unavailable

RETRY_S = 1.0  # while writes fail, how often the rollback is asked for and a write tried


class Dropped(Unavailable):
    """The caller's write was not stored and never will be: the controller undoes it (control/rollback.py)."""


class Drops:
    """Mixed into the Store, whose locks, queue counters and connection these use."""

    def _refusal(self, cause: str) -> str:
        self._cause = cause
        fix = ("let the other process holding its write lock finish" if "locked" in cause or "busy" in cause else
               "free space (or fix the disk) where it lives")
        return f"the state store {self.path} could not be written ({cause}), so nothing changed: {fix}, then retry"

    def refusal(self) -> str:
        """Why a change is refused before it begins while the store cannot write: the last failure's cause."""
        return self._refusal(self._cause).replace("could not be written", "cannot be written just now", 1)

    def _verdict(self, own: int | None) -> None:
        """Dropped if the write `own` was dropped."""
        if own is not None and any(first <= own <= last for first, last in self._dropped):
            raise Dropped(self._refusal(self._cause), reason="STORE_UNAVAILABLE")

    def _timed_out(self, own: int | None, waited: float) -> None:
        """Waited past the timeout for a leader stuck in a write. A write not in its transaction is dropped (never
        written later); one in it is stored if that transaction ends well: the answer says which."""
        self._cause = f"no write finished in {waited:.3g} s: a stalled disk, or a lock held"
        if own is not None and own > self._taken:
            self._failed = True  # what is queued is dropped by the next discard(), ours with it
            raise Dropped(
                f"the state store {self.path} has not finished a write in {waited:.3g} s (a stalled disk, or another"
                " process holding its lock), so nothing changed: fix the disk, then retry", reason="STORE_UNAVAILABLE")
        raise Unavailable(
            f"the state store {self.path} has not finished a write in {waited:.3g} s (a stalled disk, or another"
            " process holding its lock); whether this change is stored is not known until that write ends: once"
            " health says SERVING, check (e.g. `vipu queue`) before retrying", reason="STORE_UNAVAILABLE")

    def discard(self) -> bool:
        """Drop every queued write after a failed one (they are never written); True if there were any. The caller
        holds the controller's state lock, so nothing is queued meanwhile, and then undoes them in memory."""
        if not self._lock.acquire(timeout=min(1.0, self.write_timeout_s)):
            return False  # a leader is stuck in a write: the retry thread tries again (on_dropped)
        try:
            return self._discard()
        finally:
            self._lock.release()

    def _discard(self) -> bool:
        with self._queue_lock:
            if not self._failed:
                return False
            if self._enqueued > self._written:
                self._dropped = [*self._dropped[-99:], (self._written + 1, self._enqueued)]
            self._queue, self._written, self._failed = [], self._enqueued, False
            return True

    @property
    def settled(self) -> int:
        """How many queued writes are in the database or dropped (a prefix)."""
        return self._written

    def dropped_since(self, settled: int, upto: int) -> bool:
        """Whether a write after the first `settled` and up to `upto` was dropped."""
        return any(first <= upto and last > settled for first, last in self._dropped)

    @property
    def failed(self) -> bool:
        """A write failed and what is queued waits for discard()."""
        return self._failed

    @property
    def writable(self) -> bool:
        """False from a failed or timed-out write until a write works again."""
        return self._writable

    def _health(self, writable: bool) -> None:
        """Tell on_health when writing starts failing or works again; while it fails, retry the kept writes every
        second, so health says SERVING again without waiting for a client's write."""
        if writable == self._writable:
            return
        self._writable = writable
        self.outages += not writable
        self.on_health(writable)
        if not writable and self._retrying.acquire(blocking=False):
            threading.Thread(target=self._retry, name="vipu-store-retry", daemon=True).start()

    def _retry(self) -> None:
        try:
            while not self._writable and not self._closed.wait(RETRY_S):
                try:
                    if self._failed:
                        self.on_dropped()  # undone first: a failed write is never tried again
                    if self._enqueued > self._written:
                        self.flush()  # written since (the rollback's own records); success says SERVING
                    else:
                        self._probe()
                except Unavailable:
                    pass
        finally:
            self._retrying.release()

    def _probe(self) -> None:
        """A write of a row of its own: does the disk take writes again?"""
        if not self._lock.acquire(timeout=self.write_timeout_s):
            return
        try:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe', ?)",
                             (json.dumps(self.write_failures),))
        except sqlite3.Error:
            return
        finally:
            self._lock.release()
        self._health(True)

