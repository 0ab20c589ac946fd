"""One replica's share of a training step: its m micro-batches through its p stages, forward and backward, each
pipeline operation timed on its own OpTimer (work.py), gradients added into its IPUs' accumulators.

Two ways to run the same arithmetic (parallel.py picks):
- stacked: no micro-batch of a step depends on another's values (the weights change only at the step's end), so
  each stage runs its m micro-batches as one: one forward and one backward per stage, every numpy call on m
  micro-batches' rows at once (a matmul batched per micro-batch, work.StageGroup.mm), each collective and send
  moving all of them in one micro-batch's schedule (data_path.Fabric._moved). The weight and bias gradients are
  each micro-batch's, added in order (kernels.in_order), so every number equals one by one's, to the bit: a
  program of the SDK, which runs one micro-batch at a time, gets the same losses;
- one by one, in the layout's schedule order, for recomputation (and phased execution), whose blocks are held and
  freed one micro-batch at a time, for two tensor-parallel axes, and where the machines lack the SRAM for stacked
  exchange buffers (stack_fits: a stacked collective or send puts m micro-batches' values on the IPUs at once).
The virtual time is the same either way: every micro-batch of a stage has the same shapes, so its forward (and its
backward) costs what the stacked one counts for one micro-batch (work.StageGroup), and each op of the schedule gets
that timer; the pipeline timeline, the compute per IPU and the collectives logged are then those of one by one.
The activations held are too: each micro-batch's share of a stacked cache is added and freed in the schedule's
order (holdings.py).
"""

from __future__ import annotations

import numpy as np

from vipu.errors import ResourceExhausted
from vipu.jobs.train import recompute
from vipu.jobs.train.holdings import Holdings, cache_bytes
from vipu.jobs.train.work import OpTimer, StageGroup
from vipu.sdk.nn.pipeline import Op
from vipu.sdk.nn.synthetic import DTYPE, loss


def stackable(layout) -> bool:
    """Whether a replica's micro-batches can run stacked (the module's docstring says when not)."""
    return not (layout.recompute or layout.phased) and layout.t2 == 1


def exchange_names(workload) -> list[str]:
    """The tensors a stage's exchanges put on its IPUs (data_path.Fabric): tensor-parallel allreduces (and an MLP's
    all-gathers) with t > 1, pipeline sends with p > 1."""
    lay = workload.layout
    tensor = (["tp", "tp.gather"] if workload.model.kind == "mlp" else ["tp"]) if lay.tp > 1 else []
    return tensor + (["pp"] if lay.p > 1 else [])


def exchange_elements(workload) -> int:
    """The most elements one micro-batch's exchange puts on an IPU: a micro-batch's rows (of every position, for a
    transformer) of the widest activation, whole (an all-gather's result, a send's boundary)."""
    model, lay = workload.model, workload.layout
    if model.kind == "mlp":
        return lay.micro_batch * max(model.inputs, model.hidden, model.outputs)
    return lay.micro_batch * model.seq_len * model.hidden


def stack_fits(fabric, workload, accumulators: dict[int, np.ndarray]) -> bool:
    """Whether every IPU has the SRAM a stacked step's exchange buffers take: m micro-batches' values where one by
    one holds one's, beside its gradient accumulators (put at the step's end, while the buffers are still held).
    Tried on the machines themselves (their tile SRAM, and what other jobs hold there), at the widest size each
    buffer takes, and freed again (the accumulators stay: each step puts them): a layout at the SRAM limit runs one
    by one rather than fail where it fits."""
    names = exchange_names(workload) if stackable(workload.layout) else []
    if not names:
        return bool(stackable(workload.layout))
    stacked = np.zeros(workload.layout.micro_batches * exchange_elements(workload), dtype=DTYPE)
    tried = []
    try:
        for name in ["grads", *names]:
            tried.append(name)
            if name == "grads":  # the trainer's first accumulators, not used again: held without a copy
                fabric.put(name, accumulators, handed=True)
            else:
                fabric.put(name, dict.fromkeys(fabric.ipus, stacked))
        fabric.get("grads", fabric.ipus[:1])  # a read waits for every call before it: deferred puts are done
    except ResourceExhausted:
        return False
    finally:
        fabric.free([(ipu, name) for ipu in fabric.ipus for name in tried if name != "grads"])
    return True


def run_replica(trainer, rep: int, order: list[Op], x: np.ndarray, y: np.ndarray, params: dict, views: dict,
                gviews: dict, held: Holdings, losses: list[np.ndarray]) -> dict[Op, OpTimer]:
    """Replica `rep`'s ops of `order` on the global batch (x, y); appends its per-sample losses and returns each
    op's timer, in `order`."""
    if stacks(trainer):
        return _stacked(trainer, rep, order, x, y, params, views, gviews, held, losses)
    return _one_by_one(trainer, rep, order, x, y, params, views, gviews, held, losses)


def stacks(trainer) -> bool:
    """Whether the trainer's replicas run their micro-batches stacked: the layout allows it and the IPUs have the
    SRAM (stack_fits, decided when the trainer is made)."""
    return trainer.stack_fits and stackable(trainer.lay)


def op_timer(trainer) -> OpTimer:
    return OpTimer(trainer.pod, trainer.model.dtype, trainer.efficiency, trainer.partition_sync_s, trainer.prices)


def _accumulate(g: StageGroup, gviews: dict, shard_grads) -> None:
    for ipu, named in zip(g.ipus, shard_grads):
        for name, value in named.items():
            gviews[ipu][name] += value


def _stacked(trainer, rep, order, x, y, params, views, gviews, held, losses) -> dict[Op, OpTimer]:
    lay, model, fabric = trainer.lay, trainer.model, trainer.fabric
    m, p = lay.micro_batches, lay.p
    rows = slice(rep * m * lay.micro_batch, (rep + 1) * m * lay.micro_batch)  # its micro-batches, in order
    timers: dict[tuple[int, str], OpTimer] = {}
    caches, shares = {}, {}
    inbox = None
    for s in range(p):
        timer = timers[(s, "F")] = op_timer(trainer)
        g = StageGroup(fabric, rep, s, timer, m)
        xs = [x[rows]] * lay.tp if s == 0 else inbox()
        outs, caches[s] = trainer.stage.forward(model, trainer.blocks[s], [views[ipu] for ipu in g.ipus], xs, g)
        if (rep, s) not in trainer.cache_shares:  # the same shapes every step: counted at the first
            trainer.cache_shares[(rep, s)] = cache_bytes(g.ipus, caches[s], params, m)
        shares[s] = trainer.cache_shares[(rep, s)]
        if s == p - 1:
            per_sample, ds = loss(model, outs, y[rows], trainer.workload.global_batch)
            losses.append(per_sample)
            inbox = lambda ds=ds: ds  # noqa: E731
        else:
            inbox = g.send(s + 1, outs)
        timer.close()
    for s in reversed(range(p)):
        timer = timers[(s, "B")] = op_timer(trainer)
        g = StageGroup(fabric, rep, s, timer, m)
        dxs, shard_grads = trainer.stage.backward(model, trainer.blocks[s], [views[ipu] for ipu in g.ipus],
                                                  caches.pop(s), inbox(), g, need_dx=s > 0)
        _accumulate(g, gviews, shard_grads)
        if s > 0:
            inbox = g.send(s - 1, dxs)
        timer.close()
    for s, most in enumerate(held_at_most(order, p)):  # each micro-batch's, held from its forward to its backward
        held.stage_bytes(shares[s], +most)  # the peak the schedule's order reaches, one op at a time
        held.stage_bytes(shares[s], -most)
    return {op: timers[op[:2]] for op in order}


def held_at_most(order: list[Op], p: int) -> list[int]:
    """Per stage, the most micro-batches whose activations it holds at once when its ops run in `order`."""
    now, most = [0] * p, [0] * p
    for s, kind, _ in order:
        now[s] += 1 if kind == "F" else -1
        most[s] = max(most[s], now[s])
    return most


def _one_by_one(trainer, rep, order, x, y, params, views, gviews, held, losses) -> dict[Op, OpTimer]:
    lay, model, fabric = trainer.lay, trainer.model, trainer.fabric
    inbox: dict = {}  # op -> what it receives, read when called (a send returns it so: Fabric.send)
    caches: dict = {}
    timers: dict = {}
    for op in order:
        s, kind, j = op
        timer = timers[op] = op_timer(trainer)
        g = StageGroup(fabric, rep, s, timer)
        shards = [views[ipu] for ipu in g.ipus]
        if kind == "F":
            lo = (rep * lay.micro_batches + j) * lay.micro_batch
            xs = trainer._enter([x[lo:lo + lay.micro_batch]] * lay.tp if s == 0 else inbox.pop(op)(), g)
            if trainer.recompute:  # the cache is then each block's input only
                outs, cache = recompute.forward(trainer.stage, model, trainer.blocks[s], shards, xs, g)
            else:
                outs, cache = trainer.stage.forward(model, trainer.blocks[s], shards, xs, g)
            caches[(s, j)] = cache
            outs = trainer._leave(outs, g)
            held.stage_cache(g.ipus, cache, params, +1)
            if s == lay.p - 1:
                per_sample, ds = loss(model, outs, y[lo:lo + lay.micro_batch], trainer.workload.global_batch)
                losses.append(per_sample)
                inbox[(s, "B", j)] = lambda ds=ds: ds
            else:
                inbox[(s + 1, "F", j)] = g.send(s + 1, outs)
        else:
            cache = caches.pop((s, j))
            dys = trainer._enter(inbox.pop(op)(), g)
            if trainer.recompute:  # the checkpoints stay until the last block is recomputed
                dxs, shard_grads = recompute.backward(
                    trainer.stage, model, trainer.blocks[s], shards, cache, dys, g, need_dx=s > 0,
                    held=lambda block, c, sign: held.block_cache(g.ipus, block, c, params, sign))
                held.stage_cache(g.ipus, cache, params, -1)
            else:
                held.stage_cache(g.ipus, cache, params, -1)
                dxs, shard_grads = trainer.stage.backward(model, trainer.blocks[s], shards, cache, dys, g,
                                                          need_dx=s > 0)
            _accumulate(g, gviews, shard_grads)
            if s > 0:
                inbox[(s - 1, "B", j)] = g.send(s - 1, trainer._leave(dxs, g))
        timer.close()  # the op's last compute set
    return timers
