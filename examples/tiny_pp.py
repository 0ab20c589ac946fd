#!/usr/bin/env python3
"""Pipeline parallel as a user's program (what examples/tiny_pp.yaml runs as the built-in `train` workload): an
8-layer MLP split into 4 stages, one per IPU, 8 micro-batches a step in the 1F1B schedule. Each stage's operations
run in its own order; a stage's input comes from the previous stage's IPU over the emulated IPU-Links, and a stage
that waits for it idles in virtual time: the pipeline's bubble, which `vipu logs` reports.

Run it as a job: `vipu submit examples/tiny_pp.sh`.
"""

from __future__ import annotations

import numpy as np

import vipu.sdk as ipu
from tiny_training import Weights, say
from vipu.sdk.nn import architectures, mlp, synthetic
from vipu.sdk.nn.pipeline import execution_order, stage_orders
from vipu.sdk.nn.sharding import stage_blocks

MODEL = architectures.MLP(layers=8, hidden=64, inputs=32, outputs=10)
STAGES, MICRO_BATCH, MICRO_BATCHES, SCHEDULE = 4, 8, 8, "1f1b"
STEPS, LEARNING_RATE, SEED, OPTIMIZER = 20, 0.05, 2, "sgd"


def train(device, steps: int = STEPS) -> list[dict]:
    global_batch = MICRO_BATCH * MICRO_BATCHES * device.num_replicas
    weights = Weights(device, MODEL, 1, STAGES, SEED, OPTIMIZER, LEARNING_RATE)
    blocks = [stage_blocks(MODEL, 1, STAGES, s) for s in range(STAGES)]
    order = execution_order(stage_orders(SCHEDULE, STAGES, MICRO_BATCHES))
    reports = []
    for step in range(steps):
        x, y = synthetic.batch(MODEL, global_batch, SEED, step)
        params, views, grads, gviews = weights.read()
        losses = []
        for replica in device.replicas:
            stages = [device.shard_group([weights.ipu(replica, s, 0)]) for s in range(STAGES)]
            caches, douts = {}, {}
            for s, kind, j in order:
                group, ipu = stages[s], stages[s].ipus[0]
                lo = (replica * MICRO_BATCHES + j) * MICRO_BATCH
                if kind == "F":
                    xs = [x[lo:lo + MICRO_BATCH]] if s == 0 else group.recv(stages[s - 1])
                    outs, caches[(s, j)] = mlp.forward(MODEL, blocks[s], [views[ipu]], xs, group)
                    if s == STAGES - 1:
                        per_sample, douts[j] = synthetic.loss(MODEL, outs, y[lo:lo + MICRO_BATCH], global_batch)
                        losses.append(per_sample)
                    else:
                        group.send(stages[s + 1], outs)
                else:
                    ds = douts.pop(j) if s == STAGES - 1 else group.recv(stages[s + 1])
                    dxs, shard_grads = mlp.backward(MODEL, blocks[s], [views[ipu]], caches.pop((s, j)), ds, group,
                                                    need_dx=s > 0)
                    for name, value in shard_grads[0].items():
                        gviews[ipu][name] += value
                    if s > 0:
                        group.send(stages[s - 1], dxs)
                group.close()  # the operation's last compute set
        weights.update(step, params, grads)
        reports.append(device.report_step(np.concatenate(losses)))
        say(reports[-1])
    return reports


if __name__ == "__main__":
    with ipu.attach(ipus_per_replica=STAGES) as device:
        train(device)
