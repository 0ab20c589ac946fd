"""The numerical kernels every trainer shares: linear algebra pieces with hand-written backward passes.

Every function is plain numpy on whatever float dtype it is given (float32 in training, float64 in the gradient
checks), so the same code is checked against finite differences once and then trusted by the single-device
reference, by every shard of the built-in parallel execution and by users' programs. FLOPs are counted where the trainers call matmuls
(matmul_flops), matching the planner's convention: only multiply-adds of matrix products and attention count.
"""

from __future__ import annotations

import numpy as np

from vipu.sdk.nn.vector_cycles import SCORE_BACKWARD_CYCLES, SCORE_FORWARD_CYCLES

LN_EPS = 1e-5
# the most elements of every micro-batch's weight gradient at once for which wgrad makes them in one batched matmul (a
# numpy call per micro-batch costs more than the arithmetic of a small one); larger ones are made one at a time into
# one reused buffer, which stays in cache
STACKED_WGRAD_ELEMENTS = 1 << 16


def matmul_flops(a: np.ndarray, b: np.ndarray) -> float:
    """2 x m x k x n for a (..., m, k) @ (k, n) product (leading dimensions multiply m)."""
    return 2.0 * (a.size // a.shape[-1]) * a.shape[-1] * b.shape[-1]


def wgrad(a: np.ndarray, dy: np.ndarray, groups: int = 1) -> np.ndarray:
    """The weight gradient of y = a @ w for activations with any leading dimensions. `groups` micro-batches stacked
    along the first: each one's gradient (the matmul one micro-batch alone makes), added in order (as in_order)."""
    if groups == 1:
        return a.reshape(-1, a.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
    a, dy = a.reshape(groups, -1, a.shape[-1]), dy.reshape(groups, -1, dy.shape[-1])
    if groups * a.shape[-1] * dy.shape[-1] <= STACKED_WGRAD_ELEMENTS:  # small: one call, each slice the same matmul
        return in_order(np.matmul(a.mT, dy))
    out = a[0].T @ dy[0]
    part = np.empty_like(out)  # each next one's made here and added in place: no fresh memory per micro-batch
    for j in range(1, groups):
        out += np.matmul(a[j].T, dy[j], out=part)
    return out


def in_order(parts: np.ndarray) -> np.ndarray:
    """parts[0] + parts[1] + ..., left to right: the sum a loop over the micro-batches accumulates, to the bit."""
    if len(parts) == 1:
        return parts[0]
    out = parts[0] + parts[1]
    for part in parts[2:]:
        out += part  # in place: the same sums, no fresh array per micro-batch
    return out


def wgrad_flops(a: np.ndarray, dy: np.ndarray) -> float:
    return 2.0 * (a.size // a.shape[-1]) * a.shape[-1] * dy.shape[-1]


def rows(dy: np.ndarray, groups: int = 1) -> np.ndarray:
    """The bias gradient: dy summed over every leading dimension (`groups`: as wgrad's)."""
    if groups == 1:
        return dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    return in_order(dy.reshape(groups, -1, dy.shape[-1]).sum(axis=1))


def relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0)


def relu_back(dy: np.ndarray, z: np.ndarray) -> np.ndarray:
    return dy * (z > 0)


def layernorm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Normalise over the last axis, then scale and shift; returns (y, cache for layernorm_back)."""
    centred = x - _row_mean(x)
    inv = 1.0 / np.sqrt(_row_mean(centred * centred) + LN_EPS)
    norm = centred * inv
    return norm * gain + bias, (norm, inv, gain)


def layernorm_back(dy: np.ndarray, cache: tuple, groups: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dgain, dbias); `groups` as wgrad's."""
    norm, inv, gain = cache
    if groups == 1:
        axes = tuple(range(dy.ndim - 1))
        dgain = (dy * norm).sum(axis=axes)
        dbias = dy.sum(axis=axes)
    else:
        dgain, dbias = rows(dy * norm, groups), rows(dy, groups)
    dnorm = dy * gain
    dx = inv * (dnorm - _row_mean(dnorm) - norm * _row_mean(dnorm * norm))
    return dx, dgain, dbias


def _row_mean(x: np.ndarray) -> np.ndarray:
    """x.mean(axis=-1, keepdims=True), the same arithmetic (numpy's sum, then divided by the count) without the
    Python numpy wraps it in, which costs more than the sum on a small tensor-parallel shard's rows."""
    return np.add.reduce(x, axis=-1, keepdims=True) / x.shape[-1]


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(b, s, heads * d) -> (b, heads, s, d)."""
    b, s, width = x.shape
    return x.reshape(b, s, heads, width // heads).transpose(0, 2, 1, 3)


def _merge(x: np.ndarray) -> np.ndarray:
    """(b, heads, s, d) -> (b, s, heads * d)."""
    b, heads, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, heads * d)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int) -> tuple[np.ndarray, tuple]:
    """Scaled dot-product self-attention of `heads` heads (no mask) on (b, s, heads * d) projections; returns the
    context (b, s, heads * d) and the cache for attention_back."""
    qh, kh, vh = _heads(q, heads), _heads(k, heads), _heads(v, heads)
    scale = 1.0 / np.sqrt(qh.shape[-1])
    scores = (qh @ kh.transpose(0, 1, 3, 2)) * np.asarray(scale, dtype=q.dtype)
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    return _merge(probs @ vh), (qh, kh, vh, probs, scale)




def score_cycles(q: np.ndarray, s: int, heads: int, backward: bool = False) -> float:
    """Vector-unit tile cycles of attention's scores for projections q of shape (b, s, width) in `heads` heads:
    heads x s^2 scores a sample, scaled, masked and softmaxed forward (or their gradients backward)."""
    return q.shape[0] * heads * s * s * (SCORE_BACKWARD_CYCLES if backward else SCORE_FORWARD_CYCLES)


def attention_flops(q: np.ndarray, s: int) -> float:
    """Forward FLOPs of attention for projections q of shape (b, s, width): Q K^T and the weighted sum of V."""
    return 4.0 * q.shape[0] * s * s * q.shape[-1]


def attention_back(dctx: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    qh, kh, vh, probs, scale = cache
    heads = qh.shape[1]
    dout = _heads(dctx, heads)
    dprobs = dout @ vh.transpose(0, 1, 3, 2)
    dv = probs.transpose(0, 1, 3, 2) @ dout
    dscores = probs * (dprobs - (dprobs * probs).sum(axis=-1, keepdims=True))
    dscores = dscores * np.asarray(scale, dtype=dscores.dtype)
    dq = dscores @ kh
    dk = dscores.transpose(0, 1, 3, 2) @ qh
    return _merge(dq), _merge(dk), _merge(dv)


def softmax_cross_entropy(logits: np.ndarray, labels: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample losses (n,) and d(scale x sum of losses)/d logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=-1, keepdims=True)
    rows = np.arange(logits.shape[0])
    losses = np.log(total[:, 0]) - shifted[rows, labels]
    dlogits = exp / total
    dlogits[rows, labels] -= 1
    return losses, dlogits * np.asarray(scale, dtype=logits.dtype)


def squared_error(out: np.ndarray, target: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample losses 0.5 x mean over the sample's elements of (out - target)^2, and d(scale x sum)/d out."""
    diff = out - target
    per = diff[0].size
    losses = 0.5 * (diff * diff).reshape(diff.shape[0], -1).mean(axis=1)
    return losses, diff * np.asarray(scale / per, dtype=out.dtype)
