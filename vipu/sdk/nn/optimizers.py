"""The optimisers, elementwise, so updating a shard of a tensor is exactly updating that part of the whole.

- sgd: momentum SGD (the spec's "sgd: momentum SGD"), v = mu v + g, w -= lr v, mu = 0.9;
- adam: Adam (Kingma and Ba 2015) with bias correction, beta1 0.9, beta2 0.999, eps 1e-8.

Updates happen in place on float32 arrays; the constants are float32 too, so a shard's update is bit for bit the
same as the whole tensor's on those elements.
"""

from __future__ import annotations

import numpy as np

MOMENTUM = 0.9
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8

STATE = {"sgd": ("momentum",), "adam": ("m", "v")}


def state_names(kind: str) -> tuple[str, ...]:
    return STATE[kind]


def update(kind: str, lr: float, step: int, param: np.ndarray, grad: np.ndarray, state: dict[str, np.ndarray]) -> None:
    """Apply optimiser step `step` (from 0) to `param` in place, with `state` (arrays like param, zeros at first)."""
    f = param.dtype.type
    if kind == "sgd":
        v = state["momentum"]
        v *= f(MOMENTUM)
        v += grad
        param -= f(lr) * v
        return
    m, v = state["m"], state["v"]
    m *= f(BETA1)
    m += f(1 - BETA1) * grad
    v *= f(BETA2)
    v += f(1 - BETA2) * grad * grad
    t = step + 1
    m_hat = m / f(1 - BETA1 ** t)
    v_hat = v / f(1 - BETA2 ** t)
    param -= f(lr) * m_hat / (np.sqrt(v_hat) + f(EPS))
