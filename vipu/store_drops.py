"""What the Store does when a write fails, part of the Store: the failed write and those queued after it are
dropped, never written later, and the controller undoes them (control/rollback.py).

Why drop rather than keep a failed write for the next one: an error must mean nothing changed. A kept write was
stored by whatever write came next, so a request answered UNAVAILABLE took effect later, and a client that retried
as told, with a new request id (the CLI makes one per run), had it twice.

Why everything queued after it goes too: those writes were made on top of it in memory (a job's cancel after its
submit). Until discard() has dropped them, under the controller's state lock, nothing is written. A waiter learns
whether its own write was dropped (Dropped), or, waiting past the timeout for a write stuck in the kernel, whether
its write is in that stuck transaction (then it is not known yet) or not (then it is dropped): store_stalls.py.
"""

from __future__ import annotations

import json
import threading

from vipu.errors import Unavailable

RETRY_S = 1.0  # while writes fail, how often the rollback is asked for and a write tried


class Dropped(Unavailable):
    """The caller's write was not stored and never will be: the controller undoes it (control/rollback.py)."""


class Drops:
    """Mixed into the Store, whose locks, queue counters and connection these use."""

    def _refusal(self, cause: str) -> str:
        self._cause = cause
        if "locked" in cause or "busy" in cause:
            fix = "let the other process holding its write lock finish"
        elif "stalled" in cause:
            fix = "let the disk answer again (health says SERVING then)"
        else:
            fix = "free space (or fix the disk) where it lives"
        return f"the state store {self.path} could not be written ({cause}), so nothing changed: {fix}, then retry"

    @property
    def cause(self) -> str:
        """What made the last write fail, as SQLite or the timeout said it (a disk full, a lock, a stall)."""
        return self._cause

    def refusal(self) -> str:
        """Why a change is refused before it begins while the store cannot write: the last failure's cause."""
        return self._refusal(self._cause).replace("could not be written", "cannot be written just now", 1)

    def _verdict(self, own: int | None) -> None:
        """Dropped if the write `own` was dropped; Unavailable if it is in a transaction that stalled (the caller
        holds self._settle)."""
        if own is None:
            return
        if any(first <= own <= last for first, last in self._dropped):
            raise Dropped(self._refusal(self._cause), reason="STORE_UNAVAILABLE")
        taking = self._taking
        if taking is not None and taking[0] <= own <= taking[1] and (self._failed or self._written >= own):
            raise self._stuck_answer(own, self.write_timeout_s)

    def discard(self) -> bool:
        """Drop every queued write after a failed one (they are never written); True if there were any. The caller
        holds the controller's state lock, so nothing is queued meanwhile, and then undoes them in memory. A
        transaction still in the kernel is left to end (store_stalls.py): what it holds is not known yet."""
        with self._settle:
            if not self._failed:
                return False
            first = max(self._written, self._taking[1] if self._taking is not None else 0) + 1
            if self._enqueued >= first:
                self._dropped = [*self._dropped[-99:], (first, self._enqueued)]
            self._queue, self._written, self._failed = [], self._enqueued, False
            self._settle.notify_all()
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
                    if self._writer.busy_for() > RETRY_S:
                        continue  # still stuck in the kernel: a write queued now waits behind it
                    if self._enqueued > self._written:
                        self.flush()  # written since (the rollback's own records)
                        if not self._failed:
                            self._health(True)
                    else:
                        self._probe()
                except Unavailable:
                    pass
        finally:
            self._retrying.release()

    def _probe(self) -> None:
        """A write of a row of its own: does the disk take writes again? (One at a time: a probe queued behind a
        stuck write waits there.)"""
        with self._settle:
            if self._probing is not None and not self._probing.done():
                return
            self._probing = self._writer.submit(lambda: self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe', ?)",
                (json.dumps(self.write_failures),)))
        try:
            self._probing.result(timeout=self.write_timeout_s)
        except Exception:  # noqa: BLE001 - a disk error, or still stuck: tried again in a second
            return
        if not self._failed:
            self._health(True)
