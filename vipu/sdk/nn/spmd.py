"""The interface a pipeline stage's code is written against: its t tensor shards, programmed once for all of them
("SPMD": single program, multiple data).

Why an interface: the same stage code (mlp.py, transformer.py) runs in a user's program, where the shards are IPUs
of its session (vipu.sdk.ShardGroup: compute sets and collectives over gRPC), and in the built-in `train` workload,
where they are IPUs of the engine's fabric (vipu/jobs/train/work.py StageGroup). Both count every matmul's FLOPs
into the shard's IPU's open compute set, and a collective ends the compute set (BSP), so both charge the same
virtual time for the same code.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Shards(Protocol):
    t: int  # how many shards: the stage's tensor-parallel IPUs
    stacked: int  # how many micro-batches each array holds, one after another along its first axis (weight and
    # bias gradients are then each one's, added in order: kernels.in_order)

    def mm(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a @ b on shard k, its FLOPs counted on shard k's IPU."""

    def wgrad(self, k: int, a: np.ndarray, dy: np.ndarray) -> np.ndarray:
        """The weight gradient of y = a @ w on shard k (kernels.wgrad), counted."""

    def rows(self, k: int, dy: np.ndarray) -> np.ndarray:
        """The bias gradient on shard k: dy summed over its rows (kernels.rows; stacked, each micro-batch's, added
        in order)."""

    def flops(self, k: int, n: float) -> None:
        """Count n FLOPs on shard k's IPU (work that is not a matmul, e.g. attention's)."""

    def vector(self, k: int, cycles: float) -> None:
        """Count `cycles` tile cycles of vector-unit work on shard k's IPU, spread over its tiles (attention's
        softmax: kernels.score_cycles)."""

    def allreduce(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Every shard gets the sum of the shards' parts (same shape each)."""

    def all_gather(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        """Every shard gets the shards' pieces concatenated along `axis` (piece k from shard k)."""
