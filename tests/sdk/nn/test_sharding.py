"""Layers to stages and tensors to shards: every layer on exactly one stage, shards that reassemble the tensor,
and the Megatron block each MLP layer falls into."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.jobs.models import MlpModel
from vipu.sdk.nn.sharding import FlatLayout, stage_blocks, stage_layers, take, unshard


@pytest.mark.parametrize("units, p", [(1, 1), (4, 4), (5, 2), (8, 4), (24, 8)])
def test_stages_cover_the_layers_once_and_evenly(units, p):
    runs = [stage_layers(units, p, s) for s in range(p)]
    assert [i for r in runs for i in r] == list(range(units))
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


@pytest.mark.parametrize("layers, inputs, outputs, t, p, want", [
    (4, 12, 5, 2, 1, [("pair", (0, 1)), ("pair", (2, 3))]),
    (3, 12, 5, 2, 1, [("pair", (0, 1)), ("row", (2,))]),
    (1, 5, 4, 2, 1, [("col", (0,))]),
    (1, 5, 3, 2, 1, [("replicated", (0,))]),
    (4, 5, 5, 2, 4, [("col", (0,))]),  # stage 0 of 4: the 5 -> 16 layer alone
])
def test_mlp_blocks(layers, inputs, outputs, t, p, want):
    model = MlpModel(layers=layers, hidden=16, inputs=inputs, outputs=outputs)
    got = [(b.kind, b.layers) for b in stage_blocks(model, t, p, 0)]
    assert got == want


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_shards_reassemble(axis):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    pieces = [take(a, axis, 2, k) for k in range(2)]
    assert unshard(pieces, axis).tobytes() == a.tobytes()


def test_flat_layout_views_write_through():
    layout = FlatLayout.of({"w": (2, 3), "b": (3,)})
    flat = layout.pack({"w": np.ones((2, 3)), "b": np.arange(3)})
    assert layout.size == 9 and flat.tolist() == [1] * 6 + [0, 1, 2]
    layout.views(flat)["b"][...] = 7
    assert flat[6:].tolist() == [7, 7, 7]
