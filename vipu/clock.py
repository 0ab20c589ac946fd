"""Clocks: the only place vipu-sim reads the system time.

Decision code takes `now` as an argument; long-lived parts hold a Clock. The live controller uses WallClock; trace
replay and tests use VirtualClock, so the same scheduling code runs in both.
"""

import time


class WallClock:
    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()


class VirtualClock:
    def __init__(self, start: float = 0.0):
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back from {self._now} to {t}")
        self._now = t

    def advance(self, dt: float) -> None:
        self.advance_to(self._now + dt)
