"""Reads yield to writes: a long listing pauses between chunks while submissions are coming in.

Why: the controller is one Python process, and every thread of it takes turns at one interpreter lock. With
submissions keeping that lock busy, a client listing 20,000 jobs in a loop took its turns as often as they did, and
submissions fell to a fifth of their rate (bench/bench_reads.py). So a read that sees a write within the last
WINDOW_S sleeps after each chunk for long enough to use at most READ_SHARE of the time; with no writes it runs at
full speed. A read never holds the controller's lock while it sleeps (it holds none at all).
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
READ_SHARE = 0.1  # of the time a read may take while writes are coming in
WINDOW_S = 0.05  # a write this recent means writes are coming in
CHUNK = 200  # items between checks: well under a millisecond of work each


class Pacing:
    def __init__(self, last_write: Callable[[], float], share: float = READ_SHARE):
        self.last_write = last_write  # time.monotonic() of the last write
        self.pause = (1 - share) / share  # seconds asleep per second of work

    def paced(self, items: Iterable[T]) -> Iterator[T]:
        """`items`, with a pause after each chunk while writes are coming in."""
        began = time.monotonic()
        for n, item in enumerate(items, 1):
            yield item
            if n % CHUNK == 0:
                now = time.monotonic()
                if now - self.last_write() < WINDOW_S:
                    time.sleep((now - began) * self.pause)
                    now = time.monotonic()
                began = now
