"""ShardGroup: the t IPUs of one pipeline stage of one replica, as the shared stage code sees them (vipu.sdk.nn.spmd
Shards), over a program's Device.

Why: the model code in vipu.sdk.nn (mlp.py, transformer.py) is written once for a stage's t shards; the built-in
engine runs it on its own StageGroup, a program on this one. Both count each matmul's FLOPs on its shard's IPU
into the open compute set and end the set before every collective (BSP), so the same code is charged the same time
in both: call close() where an operation ends (the engine's OpTimer closes its last compute set there too).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from vipu.sdk.nn.kernels import matmul_flops, rows, wgrad, wgrad_flops


class ShardGroup:
    stacked = 1  # one micro-batch at a time (spmd.Shards)

    def __init__(self, device, ipus: list[int], dtype: str = "fp32"):
        self.device, self.ipus, self.t, self.dtype = device, ipus, len(ipus), dtype
        self._pending: dict[int, float] = {}  # IPU -> FLOPs of the open compute set
        self._cycles: dict[int, float] = {}  # IPU -> tile cycles of its vector work in the open compute set

    def mm(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a @ b on shard k, counted."""
        self.flops(k, matmul_flops(a, b))
        return a @ b

    def wgrad(self, k: int, a: np.ndarray, dy: np.ndarray) -> np.ndarray:
        self.flops(k, wgrad_flops(a, dy))
        return wgrad(a, dy)

    def rows(self, k: int, dy: np.ndarray) -> np.ndarray:
        return rows(dy)

    def flops(self, k: int, n: float) -> None:
        ipu = self.ipus[k]
        self._pending[ipu] = self._pending.get(ipu, 0.0) + n

    def vector(self, k: int, cycles: float) -> None:
        ipu = self.ipus[k]
        self._cycles[ipu] = self._cycles.get(ipu, 0.0) + cycles

    def close(self) -> float:
        """Run the open compute set on the IPUs (its virtual seconds; 0 if nothing was counted)."""
        if not self._pending and not self._cycles:
            return 0.0
        pending, cycles, self._pending, self._cycles = self._pending, self._cycles, {}, {}
        return self.device.compute({**dict.fromkeys(cycles, 0.0), **pending}, self.dtype, cycles)

    def allreduce(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Every shard gets the sum of the shards' parts (one shard: nothing to do, no compute set ends)."""
        if self.t == 1:
            return parts
        self.close()
        got = self.device.allreduce(dict(zip(self.ipus, parts)), self.ipus, name="tp")
        return [got[ipu] for ipu in self.ipus]

    def all_gather(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        if self.t == 1:
            return pieces
        self.close()
        got = self.device.all_gather(dict(zip(self.ipus, pieces)), self.ipus, axis=axis, name="tp.gather")
        return [got[ipu] for ipu in self.ipus]

    def send(self, dst: ShardGroup | Sequence[int], arrays: list[np.ndarray]) -> float:
        """This stage's boundary tensor (one identical copy per shard) to the next stage's shards; ends the open
        compute set first. Returns the send's virtual seconds."""
        self.close()
        return self.device.send(dict(zip(self.ipus, arrays)), _ipus(dst), name="pp")

    def recv(self, src: ShardGroup | Sequence[int]) -> list[np.ndarray]:
        """This stage's input from the stage `src`, once it has arrived."""
        self.close()
        got = self.device.recv(_ipus(src), self.ipus, name="pp")
        return [got[ipu] for ipu in self.ipus]


def _ipus(group: ShardGroup | Sequence[int]) -> list[int]:
    return group.ipus if isinstance(group, ShardGroup) else list(group)
