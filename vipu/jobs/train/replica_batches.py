"""The replicas of a data-parallel MLP (t = p = 1: each replica one IPU) run as one: every numpy call of a stage
on all of them, each replica on its own IPU's weights, timed per replica as if it ran alone.

Why only there: without tensor parallelism or a pipeline a replica's step exchanges nothing until the data-parallel
allreduce, so its stage can take a replica axis in front of everything (ReplicaGroup): its weights stacked from each
IPU's own buffer, its inputs its own rows of the batch. Every number equals a replica run alone, to the bit: each
matmul is a micro-batch's of one replica (np.matmul runs each of the stack's slices as the matmul that slice alone
makes), the weight and bias gradients are each micro-batch's, added in order, within each replica, and the loss and
everything elementwise is per row. What is counted is too: each replica's timer gets its own IPU's FLOPs, one
micro-batch's at a time (work.StageGroup), the same figures as when it runs alone; its activations are its share of
the stacked cache (holdings.cache_bytes).
"""

from __future__ import annotations

import math

import numpy as np

from vipu.jobs.train.holdings import cache_bytes
from vipu.jobs.train.micro_batches import held_at_most, op_timer, run_replica, stacks
from vipu.jobs.train.work import OpTimer
from vipu.sdk.nn.kernels import in_order, matmul_flops, wgrad_flops
from vipu.sdk.nn.pipeline import Op
from vipu.sdk.nn.synthetic import loss


def batchable(trainer) -> bool:
    """Whether the trainer's replicas run as one: an MLP on one IPU a replica, its micro-batches stacked, more than
    one replica."""
    lay = trainer.lay
    return trainer.model.kind == "mlp" and lay.tp == 1 and lay.p == 1 and len(trainer.replicas) > 1 and stacks(trainer)


class ReplicaGroup:
    """A stage of R replicas, each one IPU, as the stage code sees them (spmd.Shards, one shard): every array has
    the replicas along its first axis, then `stacked` micro-batches of each one after another."""

    t = 1

    def __init__(self, ipus: list[int], timers: list[OpTimer], stacked: int):
        self.ipus, self.timers, self.stacked = ipus, timers, stacked
        self.each = len(ipus) * stacked  # the micro-batches of all replicas: what a count is divided by

    def mm(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Each replica's a @ its b, one matmul of each micro-batch's rows (work.StageGroup.mm)."""
        self.flops(k, matmul_flops(a, b))
        replicas = len(self.ipus)
        out = np.matmul(a.reshape(replicas, self.stacked, -1, a.shape[-1]), b[:, None])
        return out.reshape(replicas, -1, b.shape[-1])

    def wgrad(self, k: int, a: np.ndarray, dy: np.ndarray) -> np.ndarray:
        """Each replica's weight gradient: each micro-batch's (kernels.wgrad), added in order."""
        self.flops(k, wgrad_flops(a, dy))
        shape = (len(self.ipus), self.stacked, -1)
        parts = np.matmul(a.reshape(*shape, a.shape[-1]).mT, dy.reshape(*shape, dy.shape[-1]))
        return in_order(parts.swapaxes(0, 1))

    def rows(self, k: int, dy: np.ndarray) -> np.ndarray:
        """Each replica's bias gradient (kernels.rows), kept with a row axis to broadcast as the stacked biases."""
        sums = dy.reshape(len(self.ipus), self.stacked, -1, dy.shape[-1]).sum(axis=2)
        return in_order(sums.swapaxes(0, 1))[:, None]

    def flops(self, k: int, n: float) -> None:
        # n is exactly R x stacked times one micro-batch's of one replica (whole numbers below 2**53): exact
        for ipu, timer in zip(self.ipus, self.timers):
            timer.flops(ipu, n / self.each)

    def vector(self, k: int, cycles: float) -> None:
        for ipu, timer in zip(self.ipus, self.timers):
            timer.vector(ipu, cycles / self.each)

    def allreduce(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        return parts  # one shard: nothing to exchange

    def all_gather(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        return pieces


def replica_rows(trainer, weights: dict[int, np.ndarray]) -> tuple | None:
    """Where each replica is one IPU (t = p = 1, more than one replica): the IPUs' flat weight buffers made rows of
    one array, weights[ipu] then its row (updated in place, as each buffer is), so that run_replicas takes every
    replica's weights along a first axis as views of it, not as a copy stacked every step. Returns (the IPUs in
    replica order, the rows, each name's views of them as run_replicas takes them), else None."""
    lay = trainer.lay
    if lay.tp * lay.p != 1 or len(weights) < 2:
        return None
    ipus = tuple(weights)
    rows = np.stack([weights[ipu] for ipu in ipus])
    weights.update(zip(ipus, rows))
    named = {name: rows[:, offset:offset + math.prod(shape)].reshape(len(ipus), *shape)
             for name, shape, offset in trainer.layouts[ipus[0]].entries}
    return ipus, rows, _with_row_axis(named)


def _with_row_axis(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Biases (one axis a replica) with a row axis to broadcast over each replica's rows."""
    return {name: w[:, None] if w.ndim == 2 else w for name, w in weights.items()}


def _replica_weights(trainer, ipus: list[int], params: dict, views: dict) -> dict[str, np.ndarray]:
    """Each replica's own weights along a first axis: views of the trainer's rows of them (replica_rows) while the
    step's buffers are those rows, else a copy of each IPU's buffer a slice."""
    kept = trainer.weight_rows
    if kept is not None and kept[0] == tuple(ipus) and all(params[ipu].base is kept[1] for ipu in ipus):
        return kept[2]
    return _with_row_axis({name: np.stack([views[ipu][name] for ipu in ipus]) for name in views[ipus[0]]})


def _rows_of(a: np.ndarray, reps: list[int], rows: int) -> np.ndarray:
    """Each replica's `rows` rows of the batch `a`, along a first axis: a view where the replicas are consecutive (their
    rows are then one after another in `a`), else a copy."""
    if reps == list(range(reps[0], reps[0] + len(reps))):
        return a[reps[0] * rows:(reps[-1] + 1) * rows].reshape(len(reps), rows, *a.shape[1:])
    return np.stack([a[rep * rows:(rep + 1) * rows] for rep in reps])


def each_replica(trainer, order: list[Op], x: np.ndarray, y: np.ndarray, params: dict, views: dict, gviews: dict,
                 held, losses: list[np.ndarray]):
    """(replica, its op timers) for every replica of the trainer in turn, run as one where batchable (decided when
    the trainer is made: trainer.replicas_as_one), else one by one (micro_batches.run_replica)."""
    if trainer.replicas_as_one:
        yield from run_replicas(trainer, trainer.replicas, order, x, y, params, views, gviews, held, losses).items()
        return
    for rep in trainer.replicas:
        yield rep, run_replica(trainer, rep, order, x, y, params, views, gviews, held, losses)


def run_replicas(trainer, reps: list[int], order: list[Op], x: np.ndarray, y: np.ndarray, params: dict,
                 views: dict, gviews: dict, held, losses: list[np.ndarray]) -> dict[int, dict[Op, OpTimer]]:
    """Every replica of `reps` at once (batchable); appends each one's per-sample losses in order and returns each
    one's op timers, as micro_batches.run_replica does for one."""
    lay, model = trainer.lay, trainer.model
    m, rows = lay.micro_batches, lay.micro_batches * lay.micro_batch
    ipus = [trainer.fabric.ipu(rep, 0, 0) for rep in reps]
    weights = _replica_weights(trainer, ipus, params, views)
    xs = _rows_of(x, reps, rows)
    forward = [op_timer(trainer) for _ in reps]
    outs, cache = trainer.stage.forward(model, trainer.blocks[0], [weights], [xs], ReplicaGroup(ipus, forward, m))
    key = ("replicas", tuple(reps))
    if key not in trainer.cache_shares:  # the same shapes every step: counted at the first
        share = cache_bytes(ipus[:1], cache, params, len(reps) * m)[0][1]  # one micro-batch of one replica
        trainer.cache_shares[key] = [(ipu, share) for ipu in ipus]
    logits = outs[0].reshape(-1, outs[0].shape[-1])
    targets = _rows_of(y, reps, rows).reshape(-1)
    per_sample, ds = loss(model, [logits], targets, trainer.workload.global_batch)
    losses.extend(per_sample.reshape(len(reps), -1))
    backward = [op_timer(trainer) for _ in reps]
    _, grads = trainer.stage.backward(model, trainer.blocks[0], [weights], cache, [ds[0].reshape(outs[0].shape)],
                                      ReplicaGroup(ipus, backward, m), need_dx=False)
    for r, ipu in enumerate(ipus):
        mine = gviews[ipu]
        for name, value in grads[0].items():
            mine[name] += value[r].reshape(mine[name].shape)
    for t in forward + backward:
        t.close()
    most = held_at_most(order, 1)[0]  # each micro-batch's activations, held from its forward to its backward
    held.stage_bytes(trainer.cache_shares[key], +most)
    held.stage_bytes(trainer.cache_shares[key], -most)
    return {rep: {op: (forward if op[1] == "F" else backward)[r] for op in order} for r, rep in enumerate(reps)}
