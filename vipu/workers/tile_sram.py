"""Tile SRAM of one IPU: tensors placed on tiles by a tile mapping, with exact per-tile byte accounting.

An IPU has no shared memory: each of its tiles owns a small SRAM (624 KiB on a Bow IPU, see the bow-2000 preset)
and a program only fits if every tile's share of every tensor fits in that tile. So capacity is checked per tile,
not just per IPU; the IPU-wide check runs first only because its message is the more useful one when a tensor is
simply too big for the chip. Tensors are mapped in whole elements (a tile never holds half a float), and keep
their real numpy data so the collectives can read and write them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from vipu.errors import InvalidArgument, NotFound, ResourceExhausted


@dataclass(frozen=True)
class TileSlice:
    """Elements [start, stop) of a tensor's flat data live on `tile`."""

    tile: int
    start: int
    stop: int


@dataclass(frozen=True)
class Linear:
    """Spread the elements evenly over tiles [first, first + count) in contiguous slices (the first
    `elements % count` tiles get one extra element); count None means every tile from `first` on."""

    first: int = 0
    count: int | None = None


@dataclass(frozen=True)
class Explicit:
    """Give each listed tile the next `bytes` of the tensor, in list order; a tile may appear more than once."""

    tiles: tuple[tuple[int, int], ...]


Mapping = Linear | Explicit


def explicit(pairs: Sequence[tuple[int, int]]) -> Explicit:
    return Explicit(tuple((int(t), int(b)) for t, b in pairs))


def place(mapping: Mapping, elements: int, itemsize: int, tiles: int, name: str) -> tuple[TileSlice, ...]:
    """Where each element of a tensor goes: the tile slices for `mapping` on an IPU of `tiles` tiles."""
    if isinstance(mapping, Linear):
        count = tiles - mapping.first if mapping.count is None else mapping.count
        if mapping.first < 0 or count < 1 or mapping.first + count > tiles:
            raise InvalidArgument(
                f"tensor {name!r}: linear mapping over tiles [{mapping.first}, {mapping.first + count}) is outside"
                f" the IPU's tiles [0, {tiles}); give first >= 0 and count >= 1 with first + count <= {tiles}"
            )
        per, extra = divmod(elements, count)
        slices, start = [], 0
        for i in range(min(count, elements)):
            stop = start + per + (1 if i < extra else 0)
            slices.append(TileSlice(mapping.first + i, start, stop))
            start = stop
        return tuple(slices)
    slices, start = [], 0
    for tile, nbytes in mapping.tiles:
        if not 0 <= tile < tiles:
            raise InvalidArgument(f"tensor {name!r}: tile {tile} is not on the IPU; tiles are 0..{tiles - 1}")
        if nbytes < 0 or nbytes % itemsize:
            raise InvalidArgument(
                f"tensor {name!r}: {nbytes} bytes on tile {tile} is not a whole number of {itemsize}-byte elements;"
                " map whole elements"
            )
        stop = start + nbytes // itemsize
        if nbytes:
            slices.append(TileSlice(tile, start, stop))
        start = stop
    if start != elements:
        raise InvalidArgument(
            f"tensor {name!r}: the explicit mapping places {start * itemsize:,} bytes but the tensor has"
            f" {elements * itemsize:,}; map every byte exactly once"
        )
    return tuple(slices)


@lru_cache(maxsize=4096)
def _layout(mapping: Mapping, elements: int, itemsize: int, tiles: int) -> tuple[tuple[TileSlice, ...], np.ndarray]:
    slices = place(mapping, elements, itemsize, tiles, "")
    need = np.zeros(tiles, dtype=np.int64)
    for s in slices:
        need[s.tile] += (s.stop - s.start) * itemsize
    need.flags.writeable = False  # shared by every tensor of this shape and mapping
    return slices, need


def layout(mapping: Mapping, elements: int, itemsize: int, tiles: int, name: str) -> tuple[tuple[TileSlice, ...],
                                                                                         np.ndarray]:
    """place()'s tile slices and the bytes they need per tile, worked out once per shape and mapping: a training
    step puts tensors of the same shapes again and again."""
    try:
        return _layout(mapping, elements, itemsize, tiles)
    except InvalidArgument:
        place(mapping, elements, itemsize, tiles, name)  # the same refusal, naming the tensor
        raise


@dataclass
class Tensor:
    """A tensor on the tiles. Its data is C-contiguous (a reserved one's is a placeholder); where it is read-only, a
    caller may hold it (a view the IPU lent, IpuMemory.view, or an array handed over, IpuMemory.allocate), so the
    IPU writes a copy (writable)."""

    name: str
    data: np.ndarray
    slices: tuple[TileSlice, ...]
    need: np.ndarray | None = None  # bytes per tile, when known (layout()); read-only
    mapping: Mapping | None = None  # how it was placed, when known (allocate())
    reserved: bool = False  # bytes held with no values kept (IpuMemory.reserve)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    @property
    def flat(self) -> np.ndarray:
        return self.data.reshape(-1)

    def writable(self) -> np.ndarray:
        """The flat data to write in place: copied first where it is read-only, so that what a caller holds of it
        (a view lent, an array handed over) keeps the values it had (copy on write)."""
        if not self.data.flags.writeable:
            if self.reserved:
                raise InvalidArgument(f"tensor {self.name!r} is reserved: it holds bytes but no values; put it"
                                      " before writing to it")
            self.data = np.array(self.data, order="C")
        return self.data.reshape(-1)


class IpuMemory:
    """The tile SRAM of one IPU; `label` names it in error messages ("IPU 21 (IPU 1 of machine 5)")."""

    def __init__(self, tiles: int, sram_per_tile_bytes: int, label: str = "IPU 0"):
        self.tiles = tiles
        self.tile_bytes = sram_per_tile_bytes
        self.label = label
        self.used = np.zeros(tiles, dtype=np.int64)  # bytes in use per tile
        self.tensors: dict[str, Tensor] = {}

    @property
    def capacity_bytes(self) -> int:
        return self.tiles * self.tile_bytes

    @property
    def used_bytes(self) -> int:
        return int(self.used.sum())

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self.used_bytes

    def allocate(self, name: str, array: np.ndarray, mapping: Mapping = Linear(), copy: bool = True) -> Tensor:
        """Place `array` on the tiles; an existing tensor of that name is replaced, atomically: if the new one does
        not fit (counting the old one's bytes as free), the old one stays.

        A copy of `array` is placed, unless `copy` is False: the caller then hands the array over, and a writable,
        C-contiguous array that owns its memory is held as it is (no copy), the caller's array made read-only once
        it fits, so that a later write of the caller's raises rather than changes what the IPU holds (a view the
        caller kept of it is its own to leave alone). Any other array is copied."""
        if not name:
            raise InvalidArgument("tensor name is empty; give each tensor a name")
        array = np.asarray(array)
        old = self.tensors.get(name)
        held = not copy and array.base is None and array.flags.writeable and array.flags.c_contiguous
        if (old is not None and not old.reserved and old.data.shape == array.shape
                and old.data.dtype == array.dtype and (old.mapping is mapping or old.mapping == mapping)):
            # the same tiles again (a training step's buffers): nothing to count, only the values change
            if held:
                old.data, array.flags.writeable = array.view(), False  # the view stays writable: the IPU's
            elif old.data.flags.writeable:
                np.copyto(old.data, array)
            else:  # a reader holds the old values (view): new memory
                old.data = np.array(array, copy=True, order="C")
            return old
        if held:
            tensor = self._place(name, array.view(), mapping)  # refused, the caller's array stays as it was
            array.flags.writeable = False
            return tensor
        # own it: Ray hands actors read-only views of their arguments, and a caller may write its array later
        return self._place(name, np.array(array, copy=True, order="C"), mapping)

    def _place(self, name: str, data: np.ndarray, mapping: Mapping, reserved: bool = False) -> Tensor:
        old = self.tensors.get(name)
        slices, need = layout(mapping, data.size, data.itemsize, self.tiles, name)
        free = self.tile_bytes - self.used
        if old is not None:
            free = free + self._need(old)
        self._check_fits(name, need, free)
        if old is not None:
            self.free(name)
        tensor = Tensor(name, data, slices, need, mapping, reserved)
        self.used += need
        self.tensors[name] = tensor
        return tensor

    def reserve(self, name: str, nbytes: int, mapping: Mapping = Linear()) -> Tensor:
        """Hold `nbytes` (whole bytes, mapped as `mapping`) under `name` without keeping data: the accounting of a
        buffer whose values live elsewhere. Replaces a tensor of that name as allocate() does."""
        if nbytes < 0:
            raise InvalidArgument(f"tensor {name!r}: cannot reserve {nbytes} bytes; give 0 or more")
        if not name:
            raise InvalidArgument("tensor name is empty; give each tensor a name")
        placeholder = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(int(nbytes),), strides=(0,),
                                                      writeable=False)  # every element is the one byte: never write
        return self._place(name, placeholder, mapping, reserved=True)

    def free(self, name: str) -> Tensor:
        tensor = self.tensor(name)
        self.used -= self._need(tensor)
        del self.tensors[name]
        return tensor

    def clear(self) -> None:
        """Forget every tensor: what a reset IPU holds."""
        self.used[:] = 0
        self.tensors.clear()

    def tensor(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise NotFound(f"no tensor {name!r} on {self.label}; put it there first (or load it back from"
                           " Streaming Memory)") from None

    def read(self, name: str) -> np.ndarray:
        return self.tensor(name).data.copy()

    def view(self, name: str) -> np.ndarray:
        """The tensor's values without a copy: a read-only view, whose values never change (the tensor is read-only
        from then, so the IPU's next write to it goes to a copy: Tensor.writable)."""
        tensor = self.tensor(name)
        tensor.data.flags.writeable = False
        return tensor.data.view()  # a view of a read-only array cannot be made writable again

    def read_slice(self, name: str, start: int, stop: int) -> np.ndarray:
        tensor = self.tensor(name)
        self.check_range(tensor, start, stop)
        return tensor.flat[start:stop].copy()

    def write_slice(self, name: str, start: int, stop: int, values: np.ndarray) -> None:
        tensor = self.tensor(name)
        values = self._values(tensor, start, stop, values)
        tensor.writable()[start:stop] = values

    def add_slice(self, name: str, start: int, stop: int, values: np.ndarray) -> None:
        tensor = self.tensor(name)
        values = self._values(tensor, start, stop, values)
        tensor.writable()[start:stop] += values

    def read_ranges(self, name: str, ranges) -> np.ndarray:
        """The values of element ranges [(start, stop), ...] of `name`, one after another in one flat array: a
        collective's transfer read at once (read_slice of each, joined)."""
        tensor = self.tensor(name)
        for a, b in ranges:
            self.check_range(tensor, a, b)
        flat = tensor.flat
        if len(ranges) == 1:
            return flat[ranges[0][0]:ranges[0][1]].copy()
        return np.concatenate([flat[a:b] for a, b in ranges])

    def write_ranges(self, name: str, ranges, values: np.ndarray, reduce: bool) -> None:
        """add_slice (reduce) or write_slice of each range in turn, its values the next of the flat `values`."""
        tensor = self.tensor(name)
        values = np.asarray(values).reshape(-1)
        total = 0
        for a, b in ranges:
            self.check_range(tensor, a, b)
            total += b - a
        if values.size != total:
            raise InvalidArgument(f"tensor {name!r} on {self.label}: {values.size} values for the {total} elements"
                                  f" of {len(ranges)} ranges; give exactly one value per element")
        values = values.astype(tensor.data.dtype, copy=False)
        flat, offset = tensor.writable(), 0
        for a, b in ranges:
            if reduce:
                flat[a:b] += values[offset:offset + b - a]
            else:
                flat[a:b] = values[offset:offset + b - a]
            offset += b - a

    def _need(self, tensor: Tensor) -> np.ndarray:
        """The bytes per tile the tensor takes."""
        if tensor.need is not None:
            return tensor.need
        need = np.zeros(self.tiles, dtype=np.int64)
        for s in tensor.slices:
            need[s.tile] += (s.stop - s.start) * tensor.data.itemsize
        return need

    def _check_fits(self, name: str, need: np.ndarray, free: np.ndarray) -> None:
        total, total_free = int(need.sum()), int(free.sum())
        if total > total_free:
            raise ResourceExhausted(
                f"out of memory on {self.label}: tensor {name!r} needs {total:,} bytes but the IPU has"
                f" {self.capacity_bytes:,} bytes of tile memory ({total_free:,} free): {total - total_free:,} bytes"
                " over; shard it over more IPUs, free other tensors or offload it to Streaming Memory"
            )
        over = np.flatnonzero(need > free)
        if over.size:
            tile = int(over[0])
            others = f" (and {over.size - 1} more tiles)" if over.size > 1 else ""
            raise ResourceExhausted(
                f"out of memory on {self.label}: tensor {name!r} needs {int(need[tile]):,} bytes on tile {tile},"
                f" which has {self.tile_bytes:,} bytes ({int(free[tile]):,} free): {int(need[tile] - free[tile]):,}"
                f" bytes over{others}; map it over more tiles or offload it to Streaming Memory"
            )

    def check_range(self, tensor: Tensor, start: int, stop: int) -> None:
        if not 0 <= start <= stop <= tensor.data.size:
            raise InvalidArgument(
                f"tensor {tensor.name!r} on {self.label}: element range [{start}, {stop}) is outside"
                f" [0, {tensor.data.size}); give 0 <= start <= stop <= {tensor.data.size}"
            )

    def _values(self, tensor: Tensor, start: int, stop: int, values: np.ndarray) -> np.ndarray:
        self.check_range(tensor, start, stop)
        values = np.asarray(values).reshape(-1)
        if values.size != stop - start:
            raise InvalidArgument(
                f"tensor {tensor.name!r} on {self.label}: {values.size} values for the {stop - start} elements"
                f" [{start}, {stop}); give exactly one value per element"
            )
        return values.astype(tensor.data.dtype, copy=False)
