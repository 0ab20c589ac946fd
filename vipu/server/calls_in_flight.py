"""How many DeviceService calls each run may have in flight (being served or waiting) at once; one more is refused
RESOURCE_EXHAUSTED at once, naming the limit and the fix.

Why: a call that waits (a receive, a collective, a step's report) holds one of the device server's threads until
its partner comes or its timeout_s passes, and those threads are shared by every program: one program's 64 waiting
receives once held all 32 of them, and another user's Attach went unanswered for 90 s. What the SDK needs: each
instance makes one call at a time (vipu.sdk.Device is synchronous), and a run has at most one instance per IPU; a
program that drives its IPU groups from threads of its own (a pipeline's stages) may have one call per group. So a
run may have CALLS_PER_IPU per IPU of its partition, and CALLS_PER_RUN more, but never more than half the server's
threads; the server's default threads (default_threads) hold every run's limit at once on the whole Pod, so one
run's waits never hold a thread another run needs.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from vipu.errors import ResourceExhausted

CALLS_PER_IPU = 2  # one per instance and one per IPU group, each at most one per IPU
CALLS_PER_RUN = 2
SPARE_THREADS = 16  # for calls that find no session (refused at once) and health checks
MAX_DEVICE_THREADS = 8192  # (--device-threads' bound, and the default's past a Pod1024: a thread each would be 262,160)


def default_threads(pod_ipus: int) -> int:
    """The device server's threads: every run's limit at once, with the Pod cut into 1-IPU partitions (the most
    runs it can hold), and some to spare; at most MAX_DEVICE_THREADS, where each run's limit shrinks to fit
    (CallsInFlight)."""
    return min((CALLS_PER_IPU + CALLS_PER_RUN) * pod_ipus + SPARE_THREADS, MAX_DEVICE_THREADS)


class CallsInFlight:
    """The calls each run has in flight, by its session; `threads` is the server's pool."""

    def __init__(self, threads: int):
        self.threads = threads
        self._lock = threading.Lock()
        self._calls: dict[object, int] = {}  # session -> calls in flight (none: not in the table)

    @staticmethod
    def wanted(ipus: int) -> int:
        """The calls a run on `ipus` IPUs may have in flight when the server's threads do not cut it."""
        return CALLS_PER_IPU * ipus + CALLS_PER_RUN

    def limit(self, ipus: int) -> int:
        return max(1, min(self.wanted(ipus), self.threads // 2))

    def in_flight(self, session) -> int:
        with self._lock:
            return self._calls.get(session, 0)

    @contextmanager
    def call(self, session, method: str):
        """One call of `session`'s run while inside; ResourceExhausted if the run has its limit in flight already."""
        limit = self.limit(session.size)
        with self._lock:
            calls = self._calls.get(session, 0)
            if calls >= limit:
                # cut by the server's threads, a program that keeps to one call per instance may still need more:
                # that fix is the operator's
                operator = ("; if it does, ask the operator for a larger vipu-server --device-threads (the default"
                            " holds every run's calls)" if limit < self.wanted(session.size) else "")
                raise ResourceExhausted(
                    f"{method}: job {session.job_id}'s run {session.run} has {calls} DeviceService calls in flight or"
                    f" waiting, its limit ({CALLS_PER_IPU} per IPU of its {session.size}-IPU partition +"
                    f" {CALLS_PER_RUN}, at most half the server's {self.threads} threads); make one call at a time"
                    " per instance or IPU group, as vipu.sdk does: wait for a call to answer before the next (a"
                    f" receive waits until its send comes or its timeout_s passes){operator}", reason="TOO_MANY_CALLS")
            self._calls[session] = calls + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._calls.pop(session) - 1
                if left:
                    self._calls[session] = left
