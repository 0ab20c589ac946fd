"""What each IPU holds during a step, counted from the arrays the execution keeps, as the Pod would hold them.

The arithmetic here is fp32; the Pod holds activations in the model's dtype, so their bytes scale by that.
- A stage's forward keeps a cache for its backward (stage_cache): without recomputation every block's activations,
  in SRAM; with it each block's input, in SRAM too, or, phased, in Streaming Memory, where the t IPUs of a tensor
  group, whose block inputs are identical, stash one copy, 1/t each.
- Recomputation brings one block's activations back until its backward is done (block_cache), in SRAM; phased,
  beside that block's weights and gradient accumulators, the only ones in SRAM then.
SRAM's peak is what any moment needs most: the weights, accumulators and optimiser state kept in SRAM plus the
activations then; phased, the block resident then plus its activations. memory_estimate.py counts the same bytes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable

import numpy as np

from vipu.sdk.nn.sharding import Block, FlatLayout, split_axes
from vipu.sdk.nn.synthetic import DTYPE


class Holdings:
    def __init__(self, phased: bool, t: int, value_bytes: int, kept: dict[int, int],
                 resident: Callable[[int, Block], int]):
        """kept[ipu]: bytes SRAM keeps all step (unphased); resident(ipu, block): a phased block's weights and
        accumulators."""
        self.phased, self.t, self.kept, self.resident = phased, t, kept, resident
        self.scale = value_bytes / np.dtype(DTYPE).itemsize
        self.sram: dict[int, int] = defaultdict(int)  # activations held now, in fp32 bytes
        self.stash: dict[int, int] = defaultdict(int)
        self.stash_peak: dict[int, int] = defaultdict(int)
        self.peak: dict[int, tuple[int, int]] = {}  # (SRAM in all, its activations) at the IPU's peak

    @classmethod
    def of_layouts(cls, phased: bool, t: int, value_bytes: int, kept: dict[int, int],
                   layouts: dict[int, FlatLayout]) -> Holdings:
        """resident(ipu, block) from each IPU's packed layout: the block's weights and accumulators (two values a
        parameter), counted when asked: only phased execution asks."""
        def resident(ipu: int, block: Block) -> int:
            shapes = {name: shape for name, shape, _ in layouts[ipu].entries}
            return 2 * value_bytes * sum(math.prod(shapes[name]) for name in split_axes(block))

        return cls(phased, t, value_bytes, kept, resident)

    def stage_cache(self, ipus: list[int], cache, params: dict[int, np.ndarray], sign: int) -> None:
        self.stage_bytes(_arrays(ipus, cache, params), sign)

    def stage_bytes(self, per_ipu, sign: int) -> None:
        """stage_cache of a cache counted already: (IPU, bytes) pairs (cache_bytes); `sign` caches of it added (or
        freed, negative)."""
        for ipu, nbytes in per_ipu:
            if self.phased:
                self.stash[ipu] += sign * nbytes
                self.stash_peak[ipu] = max(self.stash_peak[ipu], self.stash[ipu])
            else:
                self.sram[ipu] += sign * nbytes
                self._mark(ipu, self.kept[ipu])

    def block_cache(self, ipus: list[int], block: Block, cache, params: dict[int, np.ndarray], sign: int) -> None:
        for ipu, nbytes in _arrays(ipus, cache, params):
            self.sram[ipu] += sign * nbytes
            self._mark(ipu, self.resident(ipu, block) if self.phased else self.kept[ipu])

    def _mark(self, ipu: int, weights: int) -> None:
        activations = int(self.sram[ipu] * self.scale)
        if weights + activations > self.peak.get(ipu, (-1, 0))[0]:
            self.peak[ipu] = (weights + activations, activations)

    def sram_peak(self, ipu: int) -> tuple[int, int]:
        """(SRAM in all, of which activations) at the IPU's peak."""
        return self.peak.get(ipu, (self.kept.get(ipu, 0), 0))

    def stash_bytes(self, ipu: int) -> float:
        """The most Streaming Memory the IPU's share of the stashed block inputs took."""
        return self.stash_peak[ipu] * self.scale / self.t


def cache_bytes(ipus: list[int], cache, params: dict[int, np.ndarray], stacked: int) -> list[tuple[int, int]]:
    """Per IPU, one micro-batch's share of a cache of `stacked` micro-batches (each of its arrays holds them one
    after another along its first axis, work.StageGroup)."""
    return [(ipu, nbytes // stacked) for ipu, nbytes in _arrays(ipus, cache, params)]


def _arrays(ipus: list[int], cache, params: dict[int, np.ndarray]):
    """Per IPU, the bytes of the distinct arrays its shard of `cache` keeps (the weights it refers to excluded)."""
    for ipu, per_shard in zip(ipus, zip(*cache)):
        seen, total = set(), 0
        stack = list(per_shard)
        while stack:
            item = stack.pop()
            if isinstance(item, (tuple, list)):
                stack.extend(item)
            elif isinstance(item, np.ndarray) and id(item) not in seen:
                seen.add(id(item))
                if not np.may_share_memory(item, params[ipu]):
                    total += item.nbytes
        yield ipu, total
