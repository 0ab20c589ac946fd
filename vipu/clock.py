"""Clocks: the only place vipu-sim reads the system time.

Decision code takes `now` as an argument; long-lived parts hold a Clock. The live controller uses WallClock; trace
replay and tests use VirtualClock, so the same scheduling code runs in both.
"""

import time


class WallClock:
    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()

    @staticmethod
    def shown(t: float) -> str:
        """A time of this clock as a line of the log says it: ISO 8601, UTC, to the millisecond."""
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t))) + f".{int(t % 1 * 1000):03d}Z"


class VirtualClock:
    def __init__(self, start: float = 0.0):
        self._now = start

    def now(self) -> float:
        return self._now

    @staticmethod
    def shown(t: float) -> str:
        """A virtual time as a replay's lines say it: its seconds."""
        return f"{t:.3f}"

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back from {self._now} to {t}")
        self._now = t

    def advance(self, dt: float) -> None:
        self.advance_to(self._now + dt)
