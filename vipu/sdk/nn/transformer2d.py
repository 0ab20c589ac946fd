"""One pipeline stage of the transformer with two-dimensional tensor parallelism, as PopXL's GPT-3 runs it.

Shard k = k1 t2 + k2 of a stage's t x t2 IPUs (sharding.py split_axes_2d; graphcore/examples
nlp/gpt3_175B/popxl/modelling/attention.py GPTSelfAttentionTP2D, feed_forward.py GPTFeedForwardTP2D):
- activations between blocks are split t2 ways along the hidden axis and identical across the t axis;
- a layer norm is distributed over the t2 axis: one allreduce for the mean, one for the variance, one backward;
- Q, K, V: the shard's rows of the hidden axis (k2) by its heads (k1), partial sums completed by an allreduce over
  the t2 axis; attention of the t-group's heads, identical across the t2 axis; the output projection's partial
  sums completed over the t axis. The feed-forward likewise: the first matrix summed over t2, the second over t;
- backward, the same two allreduces per block the other way round (Megatron's f and g on each axis).
A stage's input and output are whole on every shard, as for one axis (transformer.py), so pipeline sends and the
loss stay as they are: enter() takes the shard's columns, leave() all-gathers them over the t2 axis.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from vipu.sdk.nn.kernels import (LN_EPS, attention, attention_back, attention_flops, relu, relu_back, rows,
                                 score_cycles)
from vipu.sdk.nn.sharding import Block, piece
from vipu.sdk.nn.spmd import Shards
from vipu.sdk.nn.transformer import blocks_backward

Params = dict[str, np.ndarray]


class Shards2D(Shards, Protocol):
    t1: int  # the first axis (t); `t` is every shard of the stage, t1 x t2
    t2: int

    def allreduce_t(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Sum over the t axis (the shards with the same k2)."""

    def allreduce_t2(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Sum over the t2 axis (the shards with the same k1)."""

    def all_gather_t2(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        """Concatenate along `axis` over the t2 axis."""


def enter(xs: list[np.ndarray], g: Shards2D) -> list[np.ndarray]:
    """A stage's whole input (or its output's gradient) as each shard holds it: its k2-th columns."""
    return [np.ascontiguousarray(x[..., piece(x.shape[-1], g.t2, k % g.t2)]) for k, x in enumerate(xs)]


def leave(xs: list[np.ndarray], g: Shards2D) -> list[np.ndarray]:
    """Each shard's columns gathered into the whole: what the next stage, or the loss, takes."""
    return g.all_gather_t2(xs, axis=-1)


def _norm(xs: list, gain: list, bias: list, g: Shards2D) -> tuple[list, list]:
    """Layer norm over the hidden axis split t2 ways (PopXL's LayerNormDistributed)."""
    width = xs[0].shape[-1] * g.t2
    means = g.allreduce_t2([x.sum(axis=-1, keepdims=True) for x in xs])
    centred = [x - m / width for x, m in zip(xs, means)]
    variances = g.allreduce_t2([(c * c).sum(axis=-1, keepdims=True) for c in centred])
    inv = [1.0 / np.sqrt(v / width + LN_EPS) for v in variances]
    norm = [c * i for c, i in zip(centred, inv)]
    return [n * gk + bk for n, gk, bk in zip(norm, gain, bias)], [(n, i, gk) for n, i, gk in zip(norm, inv, gain)]


def _norm_back(dys: list, caches: list, g: Shards2D) -> tuple[list, list, list]:
    width = dys[0].shape[-1] * g.t2
    axes = tuple(range(dys[0].ndim - 1))
    dnorm = [dy * gain for dy, (_, _, gain) in zip(dys, caches)]
    sums = g.allreduce_t2([np.concatenate([d.sum(axis=-1, keepdims=True), (d * n).sum(axis=-1, keepdims=True)],
                                          axis=-1) for d, (n, _, _) in zip(dnorm, caches)])
    dxs = [inv * (d - s[..., :1] / width - n * s[..., 1:] / width)
           for d, s, (n, inv, _) in zip(dnorm, sums, caches)]
    return dxs, [(dy * n).sum(axis=axes) for dy, (n, _, _) in zip(dys, caches)], [dy.sum(axis=axes) for dy in dys]


def forward(model, blocks: list[Block], shards: list[Params], xs: list[np.ndarray],
            g: Shards2D) -> tuple[list[np.ndarray], list]:
    caches = []
    for block in blocks:
        pre, cache = f"l{block.layers[0]}.", [() for _ in range(g.t)]
        if block.kind in ("layer", "attention"):
            xs, first = _attention(model, pre, shards, xs, g)
            cache = [mine + got for mine, got in zip(cache, first)]
        if block.kind in ("layer", "ffn"):
            xs, second = _ffn(pre, shards, xs, g)
            cache = [mine + got for mine, got in zip(cache, second)]
        caches.append(cache)
    return xs, caches


def _attention(model, pre: str, shards: list[Params], xs: list, g: Shards2D) -> tuple[list, list]:
    heads = model.heads // g.t1
    n1, c1 = _norm(xs, [p[pre + "ln1.g"] for p in shards], [p[pre + "ln1.b"] for p in shards], g)
    # Q, K and V's partial sums in one allreduce, as PopXL's one qkv matrix
    qkv = g.allreduce_t2([np.concatenate([g.mm(k, n1[k], p[pre + f"w{name}"]) for name in "qkv"], axis=-1)
                          for k, p in enumerate(shards)])
    parts, cache = [], []
    for k, p in enumerate(shards):
        q, kk, v = (part + p[pre + f"b{name}"] for part, name in zip(np.split(qkv[k], 3, axis=-1), "qkv"))
        g.flops(k, attention_flops(q, q.shape[1]))
        g.vector(k, score_cycles(q, q.shape[1], heads))
        ctx, ca = attention(q, kk, v, heads)
        parts.append(g.mm(k, ctx, p[pre + "wo"]))
        cache.append((n1[k], c1[k], ctx, ca))
    summed = g.allreduce_t(parts)
    return [x + (y + p[pre + "bo"]) for x, y, p in zip(xs, summed, shards)], cache


def _ffn(pre: str, shards: list[Params], xs: list, g: Shards2D) -> tuple[list, list]:
    n2, c2 = _norm(xs, [p[pre + "ln2.g"] for p in shards], [p[pre + "ln2.b"] for p in shards], g)
    zs = g.allreduce_t2([g.mm(k, n2[k], p[pre + "w1"]) for k, p in enumerate(shards)])
    parts, cache = [], []
    for k, p in enumerate(shards):
        z = zs[k] + p[pre + "b1"]
        a = relu(z)
        parts.append(g.mm(k, a, p[pre + "w2"]))
        cache.append((n2[k], c2[k], z, a))
    summed = g.allreduce_t(parts)
    return [x + (y + p[pre + "b2"]) for x, y, p in zip(xs, summed, shards)], cache


def backward(model, blocks: list[Block], shards: list[Params], caches: list, douts: list[np.ndarray],
             g: Shards2D, need_dx: bool) -> tuple[list[np.ndarray] | None, list[Params]]:
    return blocks_backward(blocks, shards, caches, douts, g, need_dx, _ffn_back, _attention_back)


def _ffn_back(pre: str, shards: list[Params], cache: list, ds: list, g: Shards2D, grads: list[Params]) -> list:
    das = g.allreduce_t2([g.mm(k, ds[k], p[pre + "w2"].T) for k, p in enumerate(shards)])
    parts = []
    for k, p in enumerate(shards):
        n2, _, z, a = cache[k]
        gk = grads[k]
        gk[pre + "b2"], gk[pre + "w2"] = rows(ds[k]), g.wgrad(k, a, ds[k])
        dz = relu_back(das[k], z)
        gk[pre + "w1"], gk[pre + "b1"] = g.wgrad(k, n2, dz), rows(dz)
        parts.append(g.mm(k, dz, p[pre + "w1"].T))
    return _through_norm(pre + "ln2", g.allreduce_t(parts), cache, ds, g, grads)


def _attention_back(pre: str, shards: list[Params], cache: list, ds: list, g: Shards2D,
                    grads: list[Params]) -> list:
    dctxs = g.allreduce_t2([g.mm(k, ds[k], p[pre + "wo"].T) for k, p in enumerate(shards)])
    parts = []
    for k, p in enumerate(shards):
        n1, _, ctx, ca = cache[k]
        gk = grads[k]
        gk[pre + "bo"], gk[pre + "wo"] = rows(ds[k]), g.wgrad(k, ctx, ds[k])
        g.flops(k, 2 * attention_flops(ctx, ctx.shape[1]))
        g.vector(k, score_cycles(ctx, ctx.shape[1], ca[0].shape[1], backward=True))
        dq, dk, dv = attention_back(dctxs[k], ca)
        dn1 = 0
        for name, d in zip("qkv", (dq, dk, dv)):
            gk[pre + f"w{name}"], gk[pre + f"b{name}"] = g.wgrad(k, n1, d), rows(d)
            dn1 = dn1 + g.mm(k, d, p[pre + f"w{name}"].T)
        parts.append(dn1)
    return _through_norm(pre + "ln1", g.allreduce_t(parts), cache, ds, g, grads)


def _through_norm(norm: str, dnorm: list, cache: list, ds: list, g: Shards2D, grads: list[Params]) -> list:
    """Through a block's distributed layer norm and its residual."""
    dxs, dgains, dbiases = _norm_back(dnorm, [c[1] for c in cache], g)
    for k in range(g.t):
        grads[k][norm + ".g"], grads[k][norm + ".b"] = dgains[k], dbiases[k]
    return [dx + d for dx, d in zip(dxs, ds)]
