"""What the Store does when its disk stalls, part of the Store: callers stop waiting and answer, and what was
stuck is settled once the disk answers.

Why callers are told two different things: a write queued behind the stuck one is dropped (never written: the
writing thread writes nothing more until the controller has undone it, store_drops.py), so "nothing changed" is
true. A write inside the stuck transaction is in the kernel's hands: it is stored if that transaction ends well,
so its caller is told that this is not known, and to check before retrying.

Why the memory is rebuilt again when the stuck transaction ends: the first rollback (at the timeout) built it from
what the database held without it; kept or not, the database now holds the truth, and whatever was queued
meanwhile was made on the memory without it, so it is dropped and made again on the rebuilt memory.
"""

from __future__ import annotations

import logging
import sqlite3

from vipu.errors import Unavailable
from vipu.store_drops import Dropped

log = logging.getLogger("vipu.store")
WATCH_S = 0.5  # how often a write that runs on is looked at: health says NOT_SERVING though no caller waits


class Stalls:
    """Mixed into the Store, whose queue counters, copy and writing thread these use."""

    def _timed_out(self, own: int | None, waited: float) -> Unavailable:
        """A caller waited past the timeout (the caller holds self._settle): the store stops writing until the
        controller has undone what is queued; the answer says whether the caller's write is dropped or not known."""
        self._cause = f"no write finished in {waited:.3g} s: a stalled disk"
        self.write_failures += self._writable  # (not the retries while it cannot write: see _settled)
        self._failed = True
        self._stalled_in(None)
        return self._stuck_answer(own, waited)

    def _stuck_answer(self, own: int | None, waited: float) -> Unavailable:
        """What a caller that stopped waiting is told of its write `own`."""
        taking = self._taking
        stuck = (f"the state store {self.path} has not finished a write in {waited:.3g} s (a stalled disk, or"
                 " another process holding its lock)")
        if own is not None and taking is not None and taking[0] <= own <= taking[1]:
            return Unavailable(
                f"{stuck}; whether this change is stored is not known until that write ends: once health says"
                " SERVING, check with `vipu queue` or `vipu show job` before retrying", reason="STORE_UNAVAILABLE")
        return Dropped(f"{stuck}, so nothing changed: fix the disk, then retry", reason="STORE_UNAVAILABLE")

    def _stalled_in(self, moved: list[str] | None) -> None:
        """A caller stopped waiting for the transaction the writing thread is in (a move's jobs, or None: the
        queued writes it took): its end is to be settled when it comes (_settled)."""
        if self._abandoned is None and (moved is not None or self._taking is not None):
            self._abandoned = moved if moved is not None else sorted(
                {name for kind, name in self._taking_keys if kind == "job"}, key=lambda n: (len(n), n))

    def _settled(self, taking: tuple[int, int] | None, rows: list, gone: list, history: list,
                 error: BaseException | None) -> None:
        """On the writing thread, once a transaction has ended: the queue, the copy and the waiters learn it."""
        with self._settle:
            abandoned, self._abandoned = self._abandoned, None
            if taking is not None:
                self._taking = None
                self._queue = [(n, changes) for n, changes in self._queue if n > taking[1]]
            if error is None:
                if self._copy is not None:
                    self._copy.committed(rows, gone, [row[0] for row in history], self.job_kinds)
                if taking is not None:
                    self._written = max(self._written, taking[1])
            elif taking is not None:
                # Counted: a write that fails while the store writes, which is what undoes callers' changes. Not
                # counted: one abandoned (counted when its caller gave up), nor the rollback's own records, tried
                # each second while it cannot write (they counted 2 to 13 in 10 s of a full disk)
                self.write_failures += abandoned is None and self._writable
                self._cause = str(error)
                self._failed = True  # kept queued, written never: discard() drops them with those queued since
                if self._written >= taking[1]:  # dropped already, but as "not known": now it is known
                    self._dropped = [*self._dropped[-99:], taking]
            if abandoned is not None:
                self._failed = True  # the memory is rebuilt from what the database holds now
                self._cause = "a write that had stalled ended late"
            self._settle.notify_all()
        if abandoned is not None:
            what = "stored" if error is None else f"not stored ({error})"
            log.warning("the write that stalled has ended: %s, whose callers were told it was not known, are %s",
                        f"jobs {', '.join(abandoned)}" if abandoned else "its changes (of no job)",
                        what)
        if error is not None and not isinstance(error, sqlite3.Error):
            log.error("a write of %s failed", self.path, exc_info=error)
        if error is not None and taking is not None:  # (a move that fails, fails alone: HistoryUnwritable)
            self._health(False)  # (writable again is the retry thread's to say, store_drops.py)

    def _watch(self) -> None:
        """While open: a transaction that runs past write_timeout_s makes health say NOT_SERVING at once, though no
        caller waits for it (a run's end, or nothing at all, may be what stalled)."""
        while not self._closed.wait(WATCH_S):
            if self._writable and self._writer.busy_for() > self.write_timeout_s:
                self._cause = f"no write finished in {self.write_timeout_s:g} s: a stalled disk"
                self._health(False)
