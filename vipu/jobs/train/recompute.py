"""Activation recomputation, as the layout's `recompute` (and phased execution, which recomputes each phase) asks:
a stage's forward keeps only each block's input, and its backward runs each block's forward again from that input
just before the block's backward, so between a micro-batch's forward and backward an IPU holds the checkpoints, and
during its backward one block's full activations on top (memory_estimate.py counts the same).

The repeated forward is real work on the emulated IPUs: its FLOPs go into the backward operation's compute sets
and its tensor-parallel collectives run on the fabric again (timing.py: 4 x forward FLOPs instead of 3, one more
pass of tensor-parallel allreduces). It sends nothing: the stage boundary was sent by the first forward.

Works with any stage module (vipu/sdk/nn/mlp.py, transformer.py): both run a list of blocks, so a block is run alone.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from vipu.sdk.nn.sharding import Block
from vipu.sdk.nn.spmd import Shards

Held = Callable[[Block, list, int], None]  # held(block, cache, +1 | -1): its activations come into / leave SRAM


def forward(stage, model, blocks: list[Block], shards: list[dict], xs: list[np.ndarray],
            g: Shards) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """The stage's outputs and its checkpoints: each block's input, per shard (the shape of a stage's cache: one
    entry per block, each a list over the shards)."""
    checkpoints = []
    for block in blocks:
        checkpoints.append(xs)
        xs, _ = stage.forward(model, [block], shards, xs, g)
    return xs, checkpoints


def backward(stage, model, blocks: list[Block], shards: list[dict], checkpoints: list, douts: list[np.ndarray],
             g: Shards, need_dx: bool, held: Held) -> tuple[list[np.ndarray] | None, list[dict]]:
    """stage.backward's result, each block's activations recomputed from its checkpoint first."""
    grads: list[dict] = [{} for _ in range(g.t)]
    ds = douts
    for index in reversed(range(len(blocks))):
        _, cache = stage.forward(model, [blocks[index]], shards, checkpoints[index], g)
        held(blocks[index], cache, +1)
        ds, block_grads = stage.backward(model, [blocks[index]], shards, cache, ds, g, need_dx=need_dx or index > 0)
        held(blocks[index], cache, -1)
        for mine, got in zip(grads, block_grads):
            mine.update(got)
    return ds, grads
