"""How long to wait before retrying a call the controller did not answer: exponential and capped, with jitter.

Why not a fixed pause: after a controller restart every CLI in a loop (squeue-style watches, scripts submitting
with request ids) retried at the same 0.2 s beat, together, into a controller still reading its state. Doubling
spreads a long outage's retries out, and jitter spreads the clients apart ("equal jitter": half the step fixed, so
a wait is never near zero, half random, so two clients do not stay in step).
"""

from __future__ import annotations

from typing import Callable

FIRST_S = 0.1  # the first retry's step
CAP_S = 2.0  # no step grows past this: a controller back up is found within about 2 s


class Backoff:
    def __init__(self, first_s: float = FIRST_S, cap_s: float = CAP_S, random: Callable[[], float] | None = None):
        self.first_s, self.cap_s, self.random = first_s, cap_s, random

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number `attempt` (0 for the first): half of min(cap, first x 2^attempt)
        plus up to the other half at random."""
        step = min(self.cap_s, self.first_s * 2 ** min(attempt, 32))
        return step / 2 + (self.random or _random)() * step / 2


def _random() -> float:
    import random  # here, at a retry: most calls never retry, and every CLI call makes a Backoff

    return random.random()
