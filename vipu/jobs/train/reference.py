"""Single-device training: the whole model on one device, the whole global batch at once, plain numpy.

This is what the parallel execution must reproduce: same weights and samples (vipu/sdk/nn/synthetic.py), same
optimiser (vipu/sdk/nn/optimizers.py). It shares only the kernels (vipu/sdk/nn/kernels.py, checked against finite
differences in the tests) with the parallel code, not its structure: no shards, no stages, no micro-batches.
"""

from __future__ import annotations

import numpy as np

from vipu.sdk.nn import optimizers as optim
from vipu.sdk.nn.kernels import (attention, attention_back, layernorm, layernorm_back, relu, relu_back, rows,
                                 softmax_cross_entropy, squared_error, wgrad)
from vipu.sdk.nn.synthetic import batch, init_params

Params = dict[str, np.ndarray]


def mlp_loss_grads(model, params: Params, x: np.ndarray, labels: np.ndarray) -> tuple[float, Params]:
    n_layers = model.layers
    inputs, pre = [], []
    a = x
    for i in range(n_layers):
        inputs.append(a)
        z = a @ params[f"l{i}.w"] + params[f"l{i}.b"]
        pre.append(z)
        a = relu(z) if i < n_layers - 1 else z
    losses, dz = softmax_cross_entropy(a, labels, 1.0 / len(x))
    grads: Params = {}
    for i in reversed(range(n_layers)):
        grads[f"l{i}.w"] = inputs[i].T @ dz
        grads[f"l{i}.b"] = dz.sum(axis=0)
        if i:
            dz = relu_back(dz @ params[f"l{i}.w"].T, pre[i - 1])
    return float(losses.mean()), grads


def layer_forward(p: Params, x: np.ndarray, heads: int) -> tuple[np.ndarray, tuple]:
    n1, c1 = layernorm(x, p["ln1.g"], p["ln1.b"])
    q, k, v = (n1 @ p[f"w{name}"] + p[f"b{name}"] for name in "qkv")
    ctx, ca = attention(q, k, v, heads)
    x1 = x + (ctx @ p["wo"] + p["bo"])
    n2, c2 = layernorm(x1, p["ln2.g"], p["ln2.b"])
    z = n2 @ p["w1"] + p["b1"]
    a = relu(z)
    return x1 + (a @ p["w2"] + p["b2"]), (n1, c1, ctx, ca, n2, c2, z, a)


def layer_backward(p: Params, dy: np.ndarray, cache: tuple) -> tuple[np.ndarray, Params]:
    n1, c1, ctx, ca, n2, c2, z, a = cache
    g: Params = {"b2": rows(dy), "w2": wgrad(a, dy)}
    dz = relu_back(dy @ p["w2"].T, z)
    g["w1"], g["b1"] = wgrad(n2, dz), rows(dz)
    dx1, g["ln2.g"], g["ln2.b"] = layernorm_back(dz @ p["w1"].T, c2)
    dx1 = dx1 + dy
    g["bo"], g["wo"] = rows(dx1), wgrad(ctx, dx1)
    dq, dk, dv = attention_back(dx1 @ p["wo"].T, ca)
    dn1 = 0
    for name, d in zip("qkv", (dq, dk, dv)):
        g[f"w{name}"], g[f"b{name}"] = wgrad(n1, d), rows(d)
        dn1 = dn1 + d @ p[f"w{name}"].T
    dx, g["ln1.g"], g["ln1.b"] = layernorm_back(dn1, c1)
    return dx + dx1, g


def transformer_loss_grads(model, params: Params, x: np.ndarray, target: np.ndarray) -> tuple[float, Params]:
    caches = []
    for i in range(model.layers):
        layer = {name[len(f"l{i}."):]: value for name, value in params.items() if name.startswith(f"l{i}.")}
        x, cache = layer_forward(layer, x, model.heads)
        caches.append((layer, cache))
    losses, dy = squared_error(x, target, 1.0 / len(x))
    grads: Params = {}
    for i in reversed(range(model.layers)):
        layer, cache = caches[i]
        dy, g = layer_backward(layer, dy, cache)
        grads.update({f"l{i}.{name}": value for name, value in g.items()})
    return float(losses.mean()), grads


def loss_and_grads(model, params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
    """The mean loss over the samples of (x, y) and its gradient for every parameter."""
    if model.kind == "mlp":
        return mlp_loss_grads(model, params, x, y)
    return transformer_loss_grads(model, params, x, y)


def train_reference(workload, steps: int | None = None) -> tuple[list[float], Params]:
    """Train on one device for `steps` (default workload.steps); returns (loss before each update, final weights)."""
    model = workload.model
    params = init_params(model, workload.seed)
    state = {name: {s: np.zeros_like(w) for s in optim.state_names(workload.optimizer)}
             for name, w in params.items()}
    losses = []
    for step in range(workload.steps if steps is None else steps):
        x, y = batch(model, workload.global_batch, workload.seed, step)
        loss, grads = loss_and_grads(model, params, x, y)
        losses.append(loss)
        for name, w in params.items():
            optim.update(workload.optimizer, workload.learning_rate, step, w, grads[name], state[name])
    return losses, params
