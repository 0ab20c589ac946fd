"""A program's model shapes (vipu.sdk.nn.architectures) and the built-in workload's validated models answer every
question the shared model code asks alike, so the same code trains either to the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.jobs.models import MlpModel, TransformerModel
from vipu.sdk.nn import architectures, synthetic
from vipu.sdk.nn.sharding import stage_blocks

PAIRS = [
    (architectures.MLP(layers=5, hidden=64, inputs=32, outputs=10),
     MlpModel(layers=5, hidden=64, inputs=32, outputs=10, dtype="fp32")),
    (architectures.Transformer(layers=2, hidden=64, heads=4, seq_len=16),
     TransformerModel(layers=2, hidden=64, heads=4, seq_len=16, dtype="fp32")),
]


@pytest.mark.parametrize("mine, builtin", PAIRS, ids=["mlp", "transformer"])
def test_the_sdks_shapes_and_the_builtin_models_give_the_same_blocks_weights_and_samples(mine, builtin):
    assert mine.units == builtin.units
    for t, p in ((1, 1), (2, 1), (1, 2), (4, 2)):
        assert [stage_blocks(mine, t, p, s) for s in range(p)] == [stage_blocks(builtin, t, p, s) for s in range(p)]
    ours, theirs = synthetic.init_params(mine, 7), synthetic.init_params(builtin, 7)
    assert list(ours) == list(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours)
    for a, b in zip(synthetic.batch(mine, 8, 7, 3), synthetic.batch(builtin, 8, 7, 3)):
        assert np.array_equal(a, b)
