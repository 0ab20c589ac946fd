"""A thread of the Store's own: the writing thread, the only one that uses the connection that writes, and the
reading thread of the job history.

Why threads of its own: on a stalled disk (fsfreeze, a hung NFS or iSCSI server) a write blocks in the kernel,
where no timeout reaches it. Done by an RPC's thread, that RPC never answered, and the connection's own mutex then
blocked every other user of it. Done here, callers wait for their write or read with a timeout and answer; this
thread is left behind, and finishes when the disk answers (store.py says what happens to a write then).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Callable


class StoreThread:
    """Runs submitted work in order, one at a time, on a daemon thread (a stuck one must not keep the process)."""

    def __init__(self, name: str):
        self._work: deque[tuple[Callable[[], object], Future, bool]] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._busy_since: float | None = None  # time.monotonic() when the timed work running now began
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Callable[[], object], timed: bool = True) -> Future:
        """Queue `work`; its Future holds what it returned or raised. Cancel the Future to skip work not begun.
        `timed`: busy_for() counts it (untimed work, a start's check of the whole history, may take long)."""
        done: Future = Future()
        with self._ready:
            self._work.append((work, done, timed))
            self._ready.notify()
        return done

    def call(self, work: Callable[[], object]):
        """Run `work` on this thread and return what it returns (for the start and the tools: untimed)."""
        return self.submit(work, timed=False).result()

    def busy_for(self) -> float:
        """How long the timed work running now has run (0: none runs)."""
        since = self._busy_since
        return 0.0 if since is None else time.monotonic() - since

    def busy_since(self) -> float | None:
        """time.monotonic() when the timed work running now began (None: none runs)."""
        return self._busy_since

    def finish(self, last: Callable[[], object], timeout: float) -> bool:
        """Run `last` after everything queued, then end the thread; False if that did not happen in `timeout`
        (the thread is stuck in the kernel: it is left behind)."""
        done = self.submit(last)
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join(timeout)
        return done.done() and not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._work and not self._closing:
                    self._ready.wait()
                if not self._work:
                    return
                work, done, timed = self._work.popleft()
            if not done.set_running_or_notify_cancel():
                continue
            self._busy_since = time.monotonic() if timed else None
            try:
                done.set_result(work())
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits for it
                done.set_exception(e)
            finally:
                self._busy_since = None
