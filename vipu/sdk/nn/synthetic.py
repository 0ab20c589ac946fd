"""What is trained: initial weights, synthetic data and the loss, all a pure function of a seed.

Every trainer calls these (the built-in engine, its single-device reference, and users' programs such as
examples/tiny_*.py), so they start from the same weights and see the same samples; the parallel ones then slice
them per IPU.

- MLP: inputs x ~ N(0, 1); the label is the argmax of a fixed random teacher network (inputs -> 32 -> outputs,
  ReLU) on x; loss: softmax cross-entropy. Weights He-initialised, biases zero.
- Transformer (no vocabulary: a stack of pre-LN encoder layers on real vectors): inputs are x ~ N(0, 1) of shape
  (seq_len, hidden) plus a fixed sinusoidal position code; the target at position i is a fixed random linear map
  of x at position i + 1 (cyclic): "next-position regression", which needs attention and positions to learn.
  Loss: half the mean squared error over the sequence and hidden units, per sample. No head and no final layer
  norm: the parameters are exactly the layers' (Q, K, V, output projection, feed-forward, two layer norms).

Every step draws a fresh batch of global_batch samples; sample j of a step goes to replica
j // (micro_batch x micro_batches), micro-batch (j // micro_batch) % micro_batches of that replica.
"""

from __future__ import annotations

import numpy as np

from vipu.sdk.nn.kernels import softmax_cross_entropy, squared_error

DTYPE = np.float32  # training arithmetic: fp32 for every model (fp16 models are timed as fp16)
TEACHER_HIDDEN = 32
_TEACHER, _BATCH, _INIT = 0, 1, 2  # rng streams


def init_params(model, seed: int) -> dict[str, np.ndarray]:
    """The full (unsharded) initial weights, in a fixed order (the order flat buffers pack them in)."""
    rng = np.random.default_rng([seed, _INIT])
    params: dict[str, np.ndarray] = {}

    def normal(name: str, shape: tuple[int, ...], std: float) -> None:
        params[name] = (rng.standard_normal(shape) * std).astype(DTYPE)

    if model.kind == "mlp":
        for i, (n_in, n_out) in enumerate(zip(model.widths, model.widths[1:])):
            normal(f"l{i}.w", (n_in, n_out), np.sqrt(2.0 / n_in))
            params[f"l{i}.b"] = np.zeros(n_out, DTYPE)
        return params
    h, f, layers = model.hidden, model.ffn_multiplier * model.hidden, model.layers
    for i in range(layers):
        p = f"l{i}."
        params[p + "ln1.g"], params[p + "ln1.b"] = np.ones(h, DTYPE), np.zeros(h, DTYPE)
        for name in ("q", "k", "v"):
            normal(p + f"w{name}", (h, h), np.sqrt(1.0 / h))
            params[p + f"b{name}"] = np.zeros(h, DTYPE)
        normal(p + "wo", (h, h), np.sqrt(1.0 / (2 * layers * h)))
        params[p + "bo"] = np.zeros(h, DTYPE)
        params[p + "ln2.g"], params[p + "ln2.b"] = np.ones(h, DTYPE), np.zeros(h, DTYPE)
        normal(p + "w1", (h, f), np.sqrt(2.0 / h))
        params[p + "b1"] = np.zeros(f, DTYPE)
        normal(p + "w2", (f, h), np.sqrt(1.0 / (2 * layers * f)))
        params[p + "b2"] = np.zeros(h, DTYPE)
    return params


def positions(seq_len: int, hidden: int) -> np.ndarray:
    """The sinusoidal position code (Vaswani et al. 2017), (seq_len, hidden)."""
    pos = np.arange(seq_len)[:, None]
    rate = np.exp(-np.log(10_000.0) * (np.arange(hidden) // 2 * 2) / hidden)[None, :]
    angle = pos * rate
    return np.where(np.arange(hidden) % 2 == 0, np.sin(angle), np.cos(angle))


def batch(model, global_batch: int, seed: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets) of optimiser step `step` (from 0): global_batch samples, in sample order."""
    n = global_batch
    teacher = np.random.default_rng([seed, _TEACHER])
    rng = np.random.default_rng([seed, _BATCH, step])
    if model.kind == "mlp":
        t1 = teacher.standard_normal((model.inputs, TEACHER_HIDDEN)) / np.sqrt(model.inputs)
        t2 = teacher.standard_normal((TEACHER_HIDDEN, model.outputs)) / np.sqrt(TEACHER_HIDDEN)
        x = rng.standard_normal((n, model.inputs))
        labels = np.argmax(np.maximum(x @ t1, 0) @ t2, axis=1)
        return x.astype(DTYPE), labels.astype(np.int64)
    h, s = model.hidden, model.seq_len
    mix = teacher.standard_normal((h, h)) / np.sqrt(h)
    x = rng.standard_normal((n, s, h))
    target = np.roll(x, -1, axis=1) @ mix
    return (x + positions(s, h)).astype(DTYPE), target.astype(DTYPE)


def loss(model, outs: list[np.ndarray], target: np.ndarray, global_batch: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The last stage's loss on one micro-batch: per-sample losses (from shard 0; every shard holds the same
    outputs) and each shard's gradient at its output, scaled by 1 / global_batch so that the gradients summed over
    every micro-batch and replica are those of the batch's mean loss."""
    fn = softmax_cross_entropy if model.kind == "mlp" else squared_error
    results = [fn(out, target, 1.0 / global_batch) for out in outs]
    return results[0][0], [d for _, d in results]
