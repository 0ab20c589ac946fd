"""One pipeline stage of the transformer on its t tensor shards: pre-LN encoder layers, Megatron-sharded.

Per layer and shard k (sharding.py): the layer norms run whole on every shard (replicated weights, identical
inputs); Q, K, V are shard k's heads; the output projection and the feed-forward's second matrix give partial
sums that one allreduce each completes (Megatron's "g"); backward, the gradients at the two layer norms' outputs
are partial per shard and one allreduce each completes them (Megatron's "f"). The arithmetic per shard is the
reference's (reference.layer_forward / layer_backward) restricted to the shard's heads and columns.
"""

from __future__ import annotations

import numpy as np

from vipu.jobs.train.kernels import (attention, attention_back, attention_flops, layernorm, layernorm_back, relu,
                                     relu_back, rows)
from vipu.jobs.train.sharding import Block
from vipu.jobs.train.work import StageGroup

Params = dict[str, np.ndarray]


def forward(model, blocks: list[Block], shards: list[Params], xs: list[np.ndarray],
            g: StageGroup) -> tuple[list[np.ndarray], list]:
    heads, caches = model.heads // g.t, []
    for block in blocks:
        pre = f"l{block.layers[0]}."
        parts, first = [], []
        for k, p in enumerate(shards):
            n1, c1 = layernorm(xs[k], p[pre + "ln1.g"], p[pre + "ln1.b"])
            q, kk, v = (g.mm(k, n1, p[pre + f"w{name}"]) + p[pre + f"b{name}"] for name in "qkv")
            g.flops(k, attention_flops(q, q.shape[1]))
            ctx, ca = attention(q, kk, v, heads)
            parts.append(g.mm(k, ctx, p[pre + "wo"]))
            first.append((n1, c1, ctx, ca))
        summed = g.allreduce(parts)
        x1 = [x + (y + p[pre + "bo"]) for x, y, p in zip(xs, summed, shards)]
        parts, second = [], []
        for k, p in enumerate(shards):
            n2, c2 = layernorm(x1[k], p[pre + "ln2.g"], p[pre + "ln2.b"])
            z = g.mm(k, n2, p[pre + "w1"]) + p[pre + "b1"]
            a = relu(z)
            parts.append(g.mm(k, a, p[pre + "w2"]))
            second.append((n2, c2, z, a))
        summed = g.allreduce(parts)
        xs = [x + (y + p[pre + "b2"]) for x, y, p in zip(x1, summed, shards)]
        caches.append([first[k] + second[k] for k in range(g.t)])
    return xs, caches


def backward(model, blocks: list[Block], shards: list[Params], caches: list, douts: list[np.ndarray],
             g: StageGroup, need_dx: bool) -> tuple[list[np.ndarray] | None, list[Params]]:
    grads: list[Params] = [{} for _ in range(g.t)]
    ds = douts
    for index in reversed(range(len(blocks))):
        pre, cache = f"l{blocks[index].layers[0]}.", caches[index]
        parts = []
        for k, p in enumerate(shards):
            n1, c1, ctx, ca, n2, c2, z, a = cache[k]
            gk = grads[k]
            gk[pre + "b2"], gk[pre + "w2"] = rows(ds[k]), g.wgrad(k, a, ds[k])
            dz = relu_back(g.mm(k, ds[k], p[pre + "w2"].T), z)
            gk[pre + "w1"], gk[pre + "b1"] = g.wgrad(k, n2, dz), rows(dz)
            parts.append(g.mm(k, dz, p[pre + "w1"].T))
        dn2 = g.allreduce(parts)
        dx1s, parts = [], []
        for k, p in enumerate(shards):
            n1, c1, ctx, ca, n2, c2, z, a = cache[k]
            gk = grads[k]
            dx1, gk[pre + "ln2.g"], gk[pre + "ln2.b"] = layernorm_back(dn2[k], c2)
            dx1 = dx1 + ds[k]
            dx1s.append(dx1)
            gk[pre + "bo"], gk[pre + "wo"] = rows(dx1), g.wgrad(k, ctx, dx1)
            g.flops(k, 2 * attention_flops(ctx, ctx.shape[1]))
            dq, dk, dv = attention_back(g.mm(k, dx1, p[pre + "wo"].T), ca)
            dn1 = 0
            for name, d in zip("qkv", (dq, dk, dv)):
                gk[pre + f"w{name}"], gk[pre + f"b{name}"] = g.wgrad(k, n1, d), rows(d)
                dn1 = dn1 + g.mm(k, d, p[pre + f"w{name}"].T)
            parts.append(dn1)
        dn1 = g.allreduce(parts)
        ds = []
        for k in range(g.t):
            dx, grads[k][pre + "ln1.g"], grads[k][pre + "ln1.b"] = layernorm_back(dn1[k], cache[k][1])
            ds.append(dx + dx1s[k])
    return (ds if need_dx else None), grads
