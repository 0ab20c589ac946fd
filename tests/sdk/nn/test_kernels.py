"""The kernels every trainer shares (the engine, its reference, users' programs), checked against finite differences
in float64, and the optimisers' elementwise property (updating a shard is updating that part of the whole)."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.jobs.models import MlpModel, TransformerModel
from vipu.sdk.nn import optimizers as optim
from vipu.sdk.nn.kernels import attention
from vipu.sdk.nn.synthetic import init_params
from vipu.jobs.train.reference import loss_and_grads

MODELS = {
    "mlp": (MlpModel(layers=3, hidden=6, inputs=5, outputs=4, dtype="fp32"), lambda rng: rng.integers(0, 4, 7)),
    "transformer": (TransformerModel(layers=2, hidden=8, heads=2, seq_len=3, ffn_multiplier=2, dtype="fp32"),
                    lambda rng: rng.standard_normal((7, 3, 8))),
}


@pytest.mark.parametrize("kind", MODELS)
def test_backward_matches_finite_differences(kind):
    model, targets = MODELS[kind]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5) if kind == "mlp" else (7, 3, 8))
    y = targets(rng)
    params = {k: v.astype(np.float64) + 0.1 * rng.standard_normal(v.shape) for k, v in init_params(model, 1).items()}
    _, grads = loss_and_grads(model, params, x, y)
    assert set(grads) == set(params)
    for name, value in params.items():
        for _ in range(3):
            index = tuple(int(rng.integers(0, n)) for n in value.shape)
            old = value[index]
            value[index] = old + 1e-6
            up, _ = loss_and_grads(model, params, x, y)
            value[index] = old - 1e-6
            down, _ = loss_and_grads(model, params, x, y)
            value[index] = old
            numeric = (up - down) / 2e-6
            assert abs(numeric - grads[name][index]) <= 1e-6 + 1e-5 * abs(numeric), (name, index)


def test_attention_heads_are_independent():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 5, 8)).astype(np.float32) for _ in range(3))
    whole, _ = attention(q, k, v, heads=4)
    halves = [attention(q[..., s], k[..., s], v[..., s], heads=2)[0] for s in (slice(0, 4), slice(4, 8))]
    np.testing.assert_allclose(np.concatenate(halves, axis=-1), whole, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_updating_a_shard_is_updating_that_part_of_the_whole(kind):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    whole, parts = w.copy(), [w[:, :2].copy(), w[:, 2:].copy()]
    state = {n: np.zeros_like(whole) for n in optim.state_names(kind)}
    part_states = [{n: np.zeros_like(p) for n in optim.state_names(kind)} for p in parts]
    for step in range(3):
        g = rng.standard_normal((6, 4)).astype(np.float32)
        optim.update(kind, 0.01, step, whole, g, state)
        for i, (p, s) in enumerate(zip(parts, part_states)):
            optim.update(kind, 0.01, step, p, np.ascontiguousarray(g[:, 2 * i:2 * i + 2]), s)
    assert np.concatenate(parts, axis=1).tobytes() == whole.tobytes()
