"""One pipeline stage of the transformer on its t tensor shards: pre-LN encoder layers, Megatron-sharded.

Per layer and shard k (sharding.py): the layer norms run whole on every shard (replicated weights, identical
inputs); Q, K, V are shard k's heads; the output projection and the feed-forward's second matrix give partial
sums that one allreduce each completes (Megatron's "g"); backward, the gradients at the two layer norms' outputs
are partial per shard and one allreduce each completes them (Megatron's "f"). The arithmetic per shard is the
built-in engine's single-device reference's (vipu/jobs/train/reference.py) restricted to the shard's heads and
columns. Written once for all shards against the Shards interface (spmd.py).
"""

from __future__ import annotations

import numpy as np

from vipu.sdk.nn.kernels import (attention, attention_back, attention_flops, layernorm, layernorm_back, relu, relu_back,
                                 score_cycles)
from vipu.sdk.nn.sharding import Block
from vipu.sdk.nn.spmd import Shards

Params = dict[str, np.ndarray]


def forward(model, blocks: list[Block], shards: list[Params], xs: list[np.ndarray],
            g: Shards) -> tuple[list[np.ndarray], list]:
    """A "layer" block runs both halves; phased, an "attention" or an "ffn" block one (blocks.py)."""
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


def _attention(model, pre: str, shards: list[Params], xs: list[np.ndarray], g: Shards) -> tuple[list, list]:
    heads, parts, cache = model.heads // g.t, [], []
    for k, p in enumerate(shards):
        n1, c1 = layernorm(xs[k], p[pre + "ln1.g"], p[pre + "ln1.b"])
        q, kk, v = (g.mm(k, n1, p[pre + f"w{name}"]) + p[pre + f"b{name}"] for name in "qkv")
        g.flops(k, attention_flops(q, q.shape[1]))
        g.vector(k, score_cycles(q, q.shape[1], heads))
        ctx, ca = attention(q, kk, v, heads)
        parts.append(g.mm(k, ctx, p[pre + "wo"]))
        cache.append((n1, c1, ctx, ca))
    summed = g.allreduce(parts)
    return [x + (y + p[pre + "bo"]) for x, y, p in zip(xs, summed, shards)], cache


def _ffn(pre: str, shards: list[Params], xs: list[np.ndarray], g: Shards) -> tuple[list, list]:
    parts, cache = [], []
    for k, p in enumerate(shards):
        n2, c2 = layernorm(xs[k], p[pre + "ln2.g"], p[pre + "ln2.b"])
        z = g.mm(k, n2, p[pre + "w1"]) + p[pre + "b1"]
        a = relu(z)
        parts.append(g.mm(k, a, p[pre + "w2"]))
        cache.append((n2, c2, z, a))
    summed = g.allreduce(parts)
    return [x + (y + p[pre + "b2"]) for x, y, p in zip(xs, summed, shards)], cache


def backward(model, blocks: list[Block], shards: list[Params], caches: list, douts: list[np.ndarray],
             g: Shards, need_dx: bool) -> tuple[list[np.ndarray] | None, list[Params]]:
    return blocks_backward(blocks, shards, caches, douts, g, need_dx, _ffn_back, _attention_back)


def blocks_backward(blocks: list[Block], shards: list[Params], caches: list, douts: list[np.ndarray], g,
                    need_dx: bool, ffn_back, attention_back) -> tuple[list[np.ndarray] | None, list[Params]]:
    """The stage's blocks backward, last first, each through its feed-forward then its attention part (one tensor
    axis here, two in transformer2d.py: they pass their own parts)."""
    grads: list[Params] = [{} for _ in range(g.t)]
    ds = douts
    for index in reversed(range(len(blocks))):
        block, cache = blocks[index], caches[index]
        pre = f"l{block.layers[0]}."
        if block.kind in ("layer", "ffn"):
            ds = ffn_back(pre, shards, [c[-4:] for c in cache], ds, g, grads)
        if block.kind in ("layer", "attention"):
            ds = attention_back(pre, shards, [c[:4] for c in cache], ds, g, grads)
    return (ds if need_dx else None), grads


def _ffn_back(pre: str, shards: list[Params], cache: list, ds: list, g: Shards, grads: list[Params]) -> list:
    """The gradient at the block's input (its residual included)."""
    parts = []
    for k, p in enumerate(shards):
        n2, c2, z, a = cache[k]
        gk = grads[k]
        gk[pre + "b2"], gk[pre + "w2"] = g.rows(k, ds[k]), g.wgrad(k, a, ds[k])
        dz = relu_back(g.mm(k, ds[k], p[pre + "w2"].T), z)
        gk[pre + "w1"], gk[pre + "b1"] = g.wgrad(k, n2, dz), g.rows(k, dz)
        parts.append(g.mm(k, dz, p[pre + "w1"].T))
    return _norm_back(pre + "ln2", g.allreduce(parts), cache, ds, grads, g.stacked)


def _attention_back(pre: str, shards: list[Params], cache: list, ds: list, g: Shards,
                    grads: list[Params]) -> list:
    parts = []
    for k, p in enumerate(shards):
        n1, c1, ctx, ca = cache[k]
        gk = grads[k]
        gk[pre + "bo"], gk[pre + "wo"] = g.rows(k, ds[k]), g.wgrad(k, ctx, ds[k])
        g.flops(k, 2 * attention_flops(ctx, ctx.shape[1]))
        g.vector(k, score_cycles(ctx, ctx.shape[1], ca[0].shape[1], backward=True))
        dq, dk, dv = attention_back(g.mm(k, ds[k], p[pre + "wo"].T), ca)
        dn1 = 0
        for name, d in zip("qkv", (dq, dk, dv)):
            gk[pre + f"w{name}"], gk[pre + f"b{name}"] = g.wgrad(k, n1, d), g.rows(k, d)
            dn1 = dn1 + g.mm(k, d, p[pre + f"w{name}"].T)
        parts.append(dn1)
    return _norm_back(pre + "ln1", g.allreduce(parts), cache, ds, grads, g.stacked)


def _norm_back(norm: str, dnorm: list, cache: list, ds: list, grads: list[Params], stacked: int) -> list:
    """Through a block's layer norm (its output's gradient summed over the shards) and its residual."""
    out = []
    for k, d in enumerate(dnorm):
        dx, grads[k][norm + ".g"], grads[k][norm + ".b"] = layernorm_back(d, cache[k][1], stacked)
        out.append(dx + ds[k])
    return out
