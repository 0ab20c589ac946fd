"""One pipeline stage of the MLP on its t tensor shards: forward and backward of its blocks (sharding.py), written
once for all shards against the Shards interface (spmd.py).

Lists are indexed by shard: shards[k] holds shard k's weights (full names, shard shapes), xs[k] its copy of the
stage input. Every block leaves its output whole and identical on every shard, so stage boundaries carry whole
activations. The model's last layer has no ReLU (its outputs are the logits).
"""

from __future__ import annotations

import numpy as np

from vipu.sdk.nn.kernels import relu, relu_back
from vipu.sdk.nn.sharding import Block, piece
from vipu.sdk.nn.spmd import Shards

Params = dict[str, np.ndarray]


def _cols(x: np.ndarray, t: int, k: int) -> np.ndarray:
    return x[..., piece(x.shape[-1], t, k)]


def _act(z: np.ndarray, layer: int, last: int) -> np.ndarray:
    return z if layer == last else relu(z)


def _act_back(d: np.ndarray, z: np.ndarray, layer: int, last: int) -> np.ndarray:
    return d if layer == last else relu_back(d, z)


def forward(model, blocks: list[Block], shards: list[Params], xs: list[np.ndarray],
            g: Shards) -> tuple[list[np.ndarray], list]:
    last, t, caches = model.layers - 1, g.t, []
    for block in blocks:
        w = [f"l{i}.w" for i in block.layers]
        b = [f"l{i}.b" for i in block.layers]
        if block.kind == "pair":
            z1 = [g.mm(k, xs[k], p[w[0]]) + p[b[0]] for k, p in enumerate(shards)]
            a1 = [relu(z) for z in z1]
            summed = g.allreduce([g.mm(k, a1[k], p[w[1]]) for k, p in enumerate(shards)])
            z2 = [y + p[b[1]] for y, p in zip(summed, shards)]
            caches.append([(xs[k], z1[k], a1[k], z2[k]) for k in range(t)])
            xs = [_act(z, block.layers[1], last) for z in z2]
        elif block.kind == "row":
            inputs = [_cols(x, t, k) for k, x in enumerate(xs)]
            summed = g.allreduce([g.mm(k, inputs[k], p[w[0]]) for k, p in enumerate(shards)])
            z = [y + p[b[0]] for y, p in zip(summed, shards)]
            caches.append([(inputs[k], z[k]) for k in range(t)])
            xs = [_act(zk, block.layers[0], last) for zk in z]
        elif block.kind == "col":
            z = [g.mm(k, xs[k], p[w[0]]) + p[b[0]] for k, p in enumerate(shards)]
            caches.append([(xs[k], z[k]) for k in range(t)])
            xs = g.all_gather([_act(zk, block.layers[0], last) for zk in z], axis=-1)
        else:  # replicated
            z = [g.mm(k, xs[k], p[w[0]]) + p[b[0]] for k, p in enumerate(shards)]
            caches.append([(xs[k], z[k]) for k in range(t)])
            xs = [_act(zk, block.layers[0], last) for zk in z]
    return xs, caches


def backward(model, blocks: list[Block], shards: list[Params], caches: list, douts: list[np.ndarray],
             g: Shards, need_dx: bool) -> tuple[list[np.ndarray] | None, list[Params]]:
    """Gradients of the stage's weights per shard, and of its input (None when not `need_dx`)."""
    last, t = model.layers - 1, g.t
    grads: list[Params] = [{} for _ in range(t)]
    ds = douts
    for index in reversed(range(len(blocks))):
        block, cache = blocks[index], caches[index]
        w = [f"l{i}.w" for i in block.layers]
        b = [f"l{i}.b" for i in block.layers]
        wants_dx = need_dx or index > 0
        if block.kind == "pair":
            parts = []
            for k, p in enumerate(shards):
                x, z1, a1, z2 = cache[k]
                dz2 = _act_back(ds[k], z2, block.layers[1], last)
                grads[k][w[1]], grads[k][b[1]] = g.wgrad(k, a1, dz2), g.rows(k, dz2)
                dz1 = relu_back(g.mm(k, dz2, p[w[1]].mT), z1)
                grads[k][w[0]], grads[k][b[0]] = g.wgrad(k, x, dz1), g.rows(k, dz1)
                parts.append(g.mm(k, dz1, p[w[0]].mT) if wants_dx else None)
            ds = g.allreduce(parts) if wants_dx else None
        elif block.kind == "row":
            pieces = []
            for k, p in enumerate(shards):
                inputs, z = cache[k]
                dz = _act_back(ds[k], z, block.layers[0], last)
                grads[k][w[0]], grads[k][b[0]] = g.wgrad(k, inputs, dz), g.rows(k, dz)
                pieces.append(g.mm(k, dz, p[w[0]].mT) if wants_dx else None)
            ds = g.all_gather(pieces, axis=-1) if wants_dx else None
        else:  # col (gathered output) and replicated
            parts = []
            for k, p in enumerate(shards):
                x, z = cache[k]
                d = _cols(ds[k], t, k) if block.kind == "col" else ds[k]
                dz = _act_back(d, z, block.layers[0], last)
                grads[k][w[0]], grads[k][b[0]] = g.wgrad(k, x, dz), g.rows(k, dz)
                parts.append(g.mm(k, dz, p[w[0]].mT) if wants_dx else None)
            ds = (g.allreduce(parts) if block.kind == "col" else parts) if wants_dx else None
    return ds, grads
