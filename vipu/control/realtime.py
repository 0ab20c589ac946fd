"""The driver on the wall clock: a thread that steps it whenever something may have changed, or an event is due.

Why a thread woken by events (SimPy's RealtimeEnvironment overrides only the step; so does this): a submit, cancel
or release wakes it at once, so an idle Pod starts a job within one cycle of its submission, with no fixed tick like
Slurm's; otherwise it sleeps until the driver's next event. Every change that can let a job start either wakes it or
is an event, so an idle controller does not step at all (IDLE_WAIT_S is a safety net): its state, and so the
snapshot reads share, stays the same. Every step runs under the controller's lock, so the scheduler, the partitions
and the store change together.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable

from vipu.errors import Unavailable

if TYPE_CHECKING:
    from vipu.control.driver import Driver
    from vipu.control.lock import StateLock
    from vipu.control.instruments import Metrics

log = logging.getLogger("vipu.loop")
IDLE_WAIT_S = 3600.0
# During a burst of submissions, steps run at most this often: one cycle then sees many new jobs, instead of one
# cycle per job each walking the whole queue. An idle Pod still starts a job at once (the gap has long passed).
MIN_GAP_S = 0.01
PURGE_SLACK_S = 1.0  # jobs due to leave memory within a second of each other leave in one step
STORE_WAIT_S = 1.0  # while the store cannot write, how often the loop looks whether it can again
PURGE_RETRY_S = 60.0  # after a move into the history failed, the next try (each failure is logged)


class RealtimeLoop:
    def __init__(self, driver: Driver, lock: StateLock, now: Callable[[], float], metrics: Metrics,
                 forget: Callable[[list], None] = lambda jobs: None, writable: Callable[[], bool] = lambda: True,
                 settle: Callable[[], None] = lambda: None):
        self.driver = driver
        self.lock = lock
        self.now = now
        self.metrics = metrics
        self.forget = forget  # told which jobs purge.py moved out of memory
        self.writable = writable  # whether the store writes: no step starts jobs it could not record
        self.settle = settle  # first in a step: runs' ends that waited for the store are recorded (run_ends.py)
        self.purge_failing: str | None = None  # why the last move into the history failed, until one works
        self._purge_after = 0.0  # monotonic: no move is tried before (after a failure)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fallbacks = 0  # policy-file failures already counted in the metrics

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="vipu-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=5)

    def wake(self) -> None:
        """Something changed that may let a job start or end: step soon."""
        self._wake.set()

    def wait_after(self, now: float) -> float:
        """How long the loop sleeps after a step at `now` unless woken: until the driver's next event, or until the
        oldest ended job is due to leave memory."""
        due = [t for t in (self.driver.next_time(), self._next_purge()) if t is not None]
        return min([IDLE_WAIT_S] + [max(0.0, t - now) for t in due])

    def _next_purge(self) -> float | None:
        """When the oldest ended job reaches min_job_age (a stale entry only wakes the loop early, harmlessly)."""
        scheduler = self.driver.scheduler
        age, ended = scheduler.config.min_job_age, scheduler.table.ended
        if age <= 0 or not ended:
            return None
        backoff = self._purge_after - time.monotonic()  # after a failed move: not before the retry
        return max(ended[0][0] + age + PURGE_SLACK_S, self.now() + backoff) if backoff > 0 else \
            ended[0][0] + age + PURGE_SLACK_S

    def _purge(self, now: float) -> None:
        """Move jobs due into the history; if that fails (a damaged history page, a failing disk), they stay in
        memory and the queue goes on: logged, and tried again PURGE_RETRY_S later."""
        if time.monotonic() < self._purge_after:
            return
        try:
            purged = self.driver.scheduler.purge(now)  # the live controller's only: replays keep every job
        except Unavailable as e:
            self.purge_failing = str(e)
            self.metrics.history_move_failures.inc()
            self._purge_after = time.monotonic() + PURGE_RETRY_S
            log.warning("ended jobs could not move to the job history, retried in %g s: %s", PURGE_RETRY_S, e)
            return
        if self.purge_failing is not None:
            log.warning("ended jobs move to the job history again")
            self.purge_failing = None
        if purged:
            self.forget(purged)

    def _count_fallbacks(self) -> None:
        """Cycles a --policy-file policy failed (policies/policy_file.py GuardedPolicy), into the metrics."""
        failures = getattr(self.driver.scheduler.policy, "failures", 0)
        if failures > self._fallbacks:
            self.metrics.policy_fallbacks.inc(failures - self._fallbacks)
            self._fallbacks = failures

    def _loop(self) -> None:
        last = 0.0
        while not self._stop.is_set():
            gap = last + MIN_GAP_S - time.monotonic()
            if gap > 0:
                self._stop.wait(gap)
            last = time.monotonic()
            if not self.writable():  # a start the store could not record would be undone, its run stopped
                self._wake.wait(timeout=STORE_WAIT_S)
                self._wake.clear()
                continue
            try:
                with self.lock, self.metrics.cycle.time():
                    self.settle()
                    now = self.now()
                    self.driver.step(now)
                    self._purge(now)
                    wait = self.wait_after(now)
                    self._count_fallbacks()
            except Exception:  # noqa: BLE001 - the loop must outlive any one bad step; the log has it
                log.exception("scheduling step failed")
                wait = IDLE_WAIT_S
            self._wake.wait(timeout=wait)
            self._wake.clear()
