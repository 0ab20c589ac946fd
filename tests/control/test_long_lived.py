"""The controller's records are frozen out of full collections, and so are the survivors of each later one."""

from __future__ import annotations

import gc
import weakref

from vipu.control.long_lived import FULL_AFTER, keep_long_lived


class Node:
    def __init__(self):
        self.other = None


def _cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_what_lives_is_frozen_and_later_garbage_cycles_are_still_collected():
    thresholds = gc.get_threshold()
    kept = [Node() for _ in range(100)]
    undo = keep_long_lived()
    try:
        assert gc.get_freeze_count() >= len(kept)
        assert gc.get_threshold() == (thresholds[0], thresholds[1], FULL_AFTER)
        gone = _cycle()  # garbage made after the freeze: a young collection reclaims it
        gc.collect(0)
        assert gone() is None
        survivor = [Node() for _ in range(100)]
        before = gc.get_freeze_count()
        gc.collect()  # a full collection: its survivors join the frozen objects
        assert gc.get_freeze_count() >= before + len(survivor)
        assert not gc.get_objects(2)
    finally:
        undo()
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == 0
