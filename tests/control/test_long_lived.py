"""What the controller keeps is frozen out of the cycle collector's walks once it survives one, and garbage cycles are
still reclaimed: young ones by the next collection, frozen ones by the next sweep."""

from __future__ import annotations

import gc
import weakref

from vipu.control.long_lived import FULL_AFTER, keep_long_lived


class Node:
    def __init__(self):
        self.other = None


def _cycle() -> tuple[Node, weakref.ref]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


def test_what_lives_is_frozen_and_so_are_the_survivors_of_each_collection():
    thresholds = gc.get_threshold()
    kept = [Node() for _ in range(100)]
    undo = keep_long_lived()
    try:
        assert gc.get_freeze_count() >= len(kept)
        assert gc.get_threshold() == (thresholds[0], thresholds[1], FULL_AFTER)
        gone = _cycle()[1]  # garbage made after the freeze: the young collection after it reclaims it
        gc.collect(0)
        assert gone() is None
        survivor = [Node() for _ in range(100)]
        before = gc.get_freeze_count()
        gc.collect(0)  # a young collection: its survivors join the frozen objects as it ends
        assert gc.get_freeze_count() >= before + len(survivor)
        walked = {id(o) for g in range(3) for o in gc.get_objects(g)}  # (a thread a test left may add its own)
        assert not walked & {id(s) for s in survivor}
    finally:
        undo()
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == 0


def test_a_cycle_frozen_by_a_collection_is_reclaimed_by_the_next_sweep():
    undo = keep_long_lived(sweep_every=3)
    try:
        a, leaked = _cycle()
        gc.collect(0)  # the first collection after the start: the cycle is alive, so it is frozen
        del a
        gc.collect(0)  # its objects are garbage now, but frozen: the second collection leaves them
        assert leaked() is not None
        gc.collect(0)  # the third is a sweep: it unfreezes everything, into the oldest generation
        assert leaked() is not None and gc.get_freeze_count() == 0
        gc.collect()  # the full collection after it walks everything, then freezes what survived
        assert leaked() is None
        assert gc.get_freeze_count() > 0
        young = _cycle()[1]
        gc.collect(0)  # back to freezing after each collection; young garbage is still reclaimed
        assert young() is None
    finally:
        undo()
