"""A walk's free IPUs kept rack by rack, so that placing a block on a large Pod costs a rack's work, not a Pod's.

Why: on 65,536 IPUs placement.place() works on masks of 8 KB, a dozen big-integer operations per level of the
buddy search, and a cycle after a wave of time limits starts two thousand jobs. Here each rack of 64 IPUs (a Pod64,
and one machine word) keeps its own mask, and for each hole size up to 32 a bitmap says which racks hold a hole of
exactly that size (a free aligned block whose buddy is not free); racks wholly free are a bitmap of their own.

Why the answer is placement.place()'s: place() takes, among the free aligned blocks of the size, the one whose
hole (the largest free aligned block around it) is smallest, the lowest on ties. A block of up to 64 IPUs lies in
one rack; in a rack that is not wholly free its hole lies in the rack too, so the smallest hole of such racks is
the lowest rack in the first bitmap, from the block's size up, that has one, and place() on that rack's mask finds
the block. Only when no such rack has room is the hole larger than a rack: then it is made of whole free racks, and
place() on the bitmap of those racks, in units of racks, finds it (as it does for blocks of a rack or more). A
property test compares both with place() on random masks.
"""

from __future__ import annotations

from vipu.partition.placement import align_mask, place

RACK = 64  # IPUs of a Pod64 rack, and a machine word
WHOLE = (1 << RACK) - 1
LEVELS = (1, 2, 4, 8, 16, 32)  # hole sizes that lie inside a rack not wholly free


_ALIGNED = [(level, align_mask(level * 2, RACK)) for level in LEVELS]
# Why the answers on a rack's word are kept: a walk that starts two thousand jobs works out a rack's holes and a
# block in it two thousand times each, and the racks of a busy Pod hold few distinct patterns (about one in six
# was new in such a walk); a look-up costs a twentieth of the answer. Cleared when full, as multifactor._ROUNDED.
KEPT = 1 << 16
_HOLES: dict[int, int] = {}
_BLOCKS: dict[int, int | None] = {}  # word << 6 | size -> place(word, RACK, size)


def hole_sizes(word: int) -> int:
    """The sizes of the holes of a rack's mask (not wholly free), as bits: size s is bit s (all powers of two)."""
    sizes = _HOLES.get(word)
    if sizes is None:
        if len(_HOLES) >= KEPT:
            _HOLES.clear()
        sizes = _HOLES[word] = _hole_sizes(word)
    return sizes


def _block(word: int, size: int) -> int | None:
    """place(word, RACK, size), kept (above); `size` below RACK."""
    key = word << 6 | size
    first = _BLOCKS.get(key, -1)
    if first == -1:
        if len(_BLOCKS) >= KEPT:
            _BLOCKS.clear()
        first = _BLOCKS[key] = place(word, RACK, size)
    return first


def _hole_sizes(word: int) -> int:
    out, free, starts = 0, word, word
    for level, aligned in _ALIGNED:  # placement.place()'s levels, on one word
        free &= free >> level  # runs of 2 * level
        wider = free & aligned  # the free aligned blocks of 2 * level
        if starts ^ (wider | (wider << level)):  # free blocks of `level` that are not half of one: holes
            out |= level
        starts = wider
    return out


class RackMasks:
    __slots__ = ("total", "words", "sizes", "whole", "holes")

    def __init__(self, mask: int, total: int):
        """`mask`: the free IPUs of a Pod of `total` IPUs, a multiple of RACK."""
        self.total = total
        raw = mask.to_bytes(total >> 3, "little")
        step = RACK >> 3
        self.words = [int.from_bytes(raw[i:i + step], "little") for i in range(0, len(raw), step)]
        self.sizes = [0] * len(self.words)  # [c]: hole_sizes() of rack c (0: no hole, or wholly free)
        self.whole = 0  # bit c: rack c is wholly free
        self.holes = dict.fromkeys(LEVELS, 0)  # hole size -> bit c: rack c has a hole of that size
        whole, holes = 0, self.holes
        for c, word in enumerate(self.words):
            if word == WHOLE:
                whole |= 1 << c
            elif word:
                sizes = self.sizes[c] = hole_sizes(word)
                for level in LEVELS:
                    if sizes & level:
                        holes[level] |= 1 << c
        self.whole = whole

    def place(self, size: int) -> int | None:
        """placement.place(mask, total, size) for the mask kept."""
        if size < RACK:
            holes, level = self.holes, size
            while level < RACK:
                racks = holes[level]
                if racks:
                    c = (racks & -racks).bit_length() - 1
                    return c * RACK + _block(self.words[c], size)  # type: ignore[operator]
                level <<= 1
        c = place(self.whole, self.total // RACK, max(1, size // RACK))
        return None if c is None else c * RACK

    def take(self, first: int, size: int) -> None:
        """A block placed on free IPUs leaves the mask."""
        if size >= RACK:
            c = first // RACK
            self.whole ^= ((1 << size // RACK) - 1) << c  # (wholly free racks: they held no hole bits)
            for k in range(c, c + size // RACK):
                self.words[k] = 0
            return
        c = first // RACK
        self._set(c, self.words[c] ^ ((1 << size) - 1) << (first % RACK))

    def refresh(self, first: int, size: int, mask: int) -> None:
        """The racks of the block, read again from `mask` (IPUs given back by an eviction)."""
        for c in range(first // RACK, (first + max(size, 1) - 1) // RACK + 1):
            self._set(c, (mask >> c * RACK) & WHOLE)

    def _set(self, c: int, word: int) -> None:
        bit = 1 << c
        if self.words[c] == WHOLE:
            self.whole ^= bit
        self.words[c] = word
        sizes = 0
        if word == WHOLE:
            self.whole |= bit
        elif word:
            sizes = hole_sizes(word)
        changed = sizes ^ self.sizes[c]
        if changed:
            self.sizes[c] = sizes
            holes = self.holes
            while changed:  # (its bits are the hole sizes themselves: only those that changed are visited)
                level = changed & -changed
                holes[level] ^= bit
                changed ^= level
