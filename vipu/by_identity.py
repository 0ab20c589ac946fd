"""Values worked out from an object, kept by the object's identity: a training loop hands the machines the same frozen
objects every step (its BSP steps, a known schedule's transfers and results), so what is worked out from one (its
price, its split per machine, its IPUs) is worked out once.

The object is kept beside its value: an id is unique only while its object lives, so a kept object's id cannot be
reused by another meanwhile. At `limit` objects all are dropped: a long-lived machine's bound.
"""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class ByIdentity(Generic[V]):
    def __init__(self, limit: int):
        self.limit = limit
        self._kept: dict[int, tuple[object, V]] = {}

    def get(self, obj: object) -> V | None:
        """The value kept for this very object, or None."""
        kept = self._kept.get(id(obj))
        return kept[1] if kept is not None and kept[0] is obj else None

    def put(self, obj: object, value: V) -> V:
        if len(self._kept) >= self.limit:
            self._kept.clear()
        self._kept[id(obj)] = (obj, value)
        return value
