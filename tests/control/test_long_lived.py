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
        old = {id(o) for o in gc.get_objects(2)}  # (other threads' objects may be there: a thread a test left)
        assert not old & {id(s) for s in survivor}
    finally:
        undo()
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == 0


def test_a_cycle_frozen_by_a_full_collection_is_reclaimed_by_the_next_sweep():
    undo = keep_long_lived(sweep_every=3)
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        leaked = weakref.ref(a)
        gc.collect()  # the first full collection after the start: the cycle is alive, so it is frozen
        del a, b
        gc.collect()  # its objects are garbage now, but frozen: a plain full collection leaves them
        assert leaked() is not None
        gc.collect()  # the third: a sweep walks the frozen objects too
        assert leaked() is None
        assert gc.get_freeze_count() > 0  # and freezes what survived it again
    finally:
        undo()
