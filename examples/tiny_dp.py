#!/usr/bin/env python3
"""Data parallel as a user's program (what examples/tiny_dp.yaml runs as the built-in `train` workload): a small
MLP replicated on the partition's IPUs, one replica per IPU; each replica trains on its samples of the global batch,
micro-batch by micro-batch, and the replicas allreduce their gradients once a step over the emulated IPU-Links.

Run it as a job: `vipu submit examples/tiny_dp.sh` (or under a launcher, each instance running its replicas).
"""

from __future__ import annotations

import numpy as np

import vipu.sdk as ipu
from tiny_training import Weights, say
from vipu.sdk.nn import architectures, mlp, synthetic
from vipu.sdk.nn.sharding import stage_blocks

MODEL = architectures.MLP(layers=4, hidden=64, inputs=32, outputs=10)
MICRO_BATCH, MICRO_BATCHES = 8, 2
STEPS, LEARNING_RATE, SEED, OPTIMIZER = 20, 0.05, 1, "sgd"


def train(device, steps: int = STEPS) -> list[dict]:
    global_batch = MICRO_BATCH * MICRO_BATCHES * device.num_replicas
    weights = Weights(device, MODEL, 1, 1, SEED, OPTIMIZER, LEARNING_RATE)
    blocks = stage_blocks(MODEL, 1, 1, 0)
    reports = []
    for step in range(steps):
        x, y = synthetic.batch(MODEL, global_batch, SEED, step)
        params, views, grads, gviews = weights.read()
        losses = []
        for replica in device.replicas:
            ipu = weights.ipu(replica, 0, 0)
            group = device.shard_group([ipu])
            for j in range(MICRO_BATCHES):  # forward then backward of each micro-batch (1F1B on one stage)
                lo = (replica * MICRO_BATCHES + j) * MICRO_BATCH
                outs, cache = mlp.forward(MODEL, blocks, [views[ipu]], [x[lo:lo + MICRO_BATCH]], group)
                per_sample, douts = synthetic.loss(MODEL, outs, y[lo:lo + MICRO_BATCH], global_batch)
                losses.append(per_sample)
                group.close()  # the forward's compute set
                _, shard_grads = mlp.backward(MODEL, blocks, [views[ipu]], cache, douts, group, need_dx=False)
                for name, value in shard_grads[0].items():
                    gviews[ipu][name] += value
                group.close()
        if device.num_replicas > 1:  # every replica's IPU sums the gradients of all
            grads = device.allreduce(grads, device.across_replicas(), name="grads")
        weights.update(step, params, grads)
        reports.append(device.report_step(np.concatenate(losses)))
        say(reports[-1])
    return reports


if __name__ == "__main__":
    print(f"instance {ipu.getInstanceIndex()} of {ipu.getNumInstances()}: replicas"
          f" {ipu.getReplicaIndexOffset()}-{ipu.getReplicaIndexOffset() + ipu.getNumLocalReplicas() - 1} of"
          f" {ipu.getNumTotalReplicas()}", flush=True)
    with ipu.attach(ipus_per_replica=1) as device:
        train(device)
