"""numpy arrays on the wire (vipu.v1.Array), both ways: the one codec the SDK and the controller's DeviceService use.

Why checked here: the bytes come from another process. Only plain numeric dtypes are taken (bool, integers,
floats, complex), in the byte order given, and the bytes must be exactly the shape's; anything else is refused
naming what is wrong, never guessed.
"""

from __future__ import annotations

import numpy as np

from vipu.errors import InvalidArgument
from vipu.v1 import device_pb2 as d

KINDS = "biufc"  # numpy dtype kinds that are plain numbers


def to_wire(array) -> d.Array:
    array = np.ascontiguousarray(array)
    if array.dtype.kind not in KINDS:
        raise InvalidArgument(f"an array of {array.dtype} cannot go to an IPU; give numbers (bool, int, float)")
    return d.Array(dtype=array.dtype.str, shape=list(array.shape), data=array.tobytes())


def from_wire(message: d.Array, what: str = "array") -> np.ndarray:
    try:
        dtype = np.dtype(message.dtype)
    except TypeError:
        raise InvalidArgument(f"{what}: dtype {message.dtype!r} is not a numpy dtype; give e.g. '<f4'") from None
    if dtype.kind not in KINDS or dtype.itemsize == 0:
        raise InvalidArgument(f"{what}: dtype {message.dtype!r} is not a plain number type; give bool, int or float")
    shape = tuple(message.shape)
    if any(n < 0 for n in shape):
        raise InvalidArgument(f"{what}: shape {list(shape)} has a negative size")
    count = int(np.prod(shape, dtype=np.int64))
    if count * dtype.itemsize != len(message.data):
        raise InvalidArgument(f"{what}: {len(message.data)} bytes for shape {list(shape)} of {dtype} (needs"
                              f" {count * dtype.itemsize}); send the array's own bytes")
    return np.frombuffer(message.data, dtype=dtype).reshape(shape).copy()
