#!/usr/bin/env python3
"""Tensor parallel as a user's program (what examples/tiny_tp.yaml runs as the built-in `train` workload): a
2-layer transformer with 4 heads sharded Megatron-style over 4 IPUs, one head each. Every shard computes from its own
weights; the partial sums meet in allreduces among the 4 IPUs, 2 forward and 2 backward per layer, each ending the
compute set before it.

Run it as a job: `vipu submit examples/tiny_tp.sh`.
"""

from __future__ import annotations

import numpy as np

import vipu.sdk as ipu
from tiny_training import Weights, say
from vipu.sdk.nn import architectures, synthetic, transformer
from vipu.sdk.nn.sharding import stage_blocks

MODEL = architectures.Transformer(layers=2, hidden=64, heads=4, seq_len=16)
SHARDS, MICRO_BATCH, MICRO_BATCHES = 4, 4, 2
STEPS, LEARNING_RATE, SEED, OPTIMIZER = 20, 0.001, 3, "adam"


def train(device, steps: int = STEPS) -> list[dict]:
    global_batch = MICRO_BATCH * MICRO_BATCHES * device.num_replicas
    weights = Weights(device, MODEL, SHARDS, 1, SEED, OPTIMIZER, LEARNING_RATE)
    blocks = stage_blocks(MODEL, SHARDS, 1, 0)
    reports = []
    for step in range(steps):
        x, y = synthetic.batch(MODEL, global_batch, SEED, step)
        params, views, grads, gviews = weights.read()
        losses = []
        for replica in device.replicas:
            ipus = [weights.ipu(replica, 0, k) for k in range(SHARDS)]
            group, shards = device.shard_group(ipus), [views[ipu] for ipu in ipus]
            for j in range(MICRO_BATCHES):
                lo = (replica * MICRO_BATCHES + j) * MICRO_BATCH
                outs, cache = transformer.forward(MODEL, blocks, shards, [x[lo:lo + MICRO_BATCH]] * SHARDS, group)
                per_sample, douts = synthetic.loss(MODEL, outs, y[lo:lo + MICRO_BATCH], global_batch)
                losses.append(per_sample)
                group.close()
                _, shard_grads = transformer.backward(MODEL, blocks, shards, cache, douts, group, need_dx=False)
                for ipu, named in zip(ipus, shard_grads):
                    for name, value in named.items():
                        gviews[ipu][name] += value
                group.close()
        weights.update(step, params, grads)
        reports.append(device.report_step(np.concatenate(losses)))
        say(reports[-1])
    return reports


if __name__ == "__main__":
    with ipu.attach(ipus_per_replica=SHARDS) as device:
        train(device)
