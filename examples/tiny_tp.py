#!/usr/bin/env python3
"""Tensor parallel as a user's program (what examples/tiny_tp.yaml runs as the built-in `train` workload): a
2-layer transformer with 4 heads sharded Megatron-style over 4 IPUs, one head each. Every shard computes from its own
weights; the partial sums meet in allreduces among the 4 IPUs, 2 forward and 2 backward per layer, each ending the
compute set before it.

Run it as a job: `vipu submit examples/tiny_tp.sh`.
"""

from __future__ import annotations

import vipu.sdk as ipu
from tiny_training import Step, Training, train
from vipu.sdk.nn import architectures, synthetic, transformer
from vipu.sdk.nn.sharding import stage_blocks

TRAINING = Training(model=architectures.Transformer(layers=2, hidden=64, heads=4, seq_len=16), t=4, p=1,
                    micro_batch=4, micro_batches=2, steps=20, learning_rate=0.001, seed=3, optimizer="adam")
BLOCKS = stage_blocks(TRAINING.model, TRAINING.t, 1, 0)


def tensor_parallel(device):
    def run_step(step: Step):
        model, mb, t, losses = TRAINING.model, TRAINING.micro_batch, TRAINING.t, []
        for replica in device.replicas:
            ipus = [step.weights.ipu(replica, 0, k) for k in range(t)]
            group, shards = device.shard_group(ipus), [step.views[i] for i in ipus]
            for j in range(TRAINING.micro_batches):
                lo = (replica * TRAINING.micro_batches + j) * mb
                outs, cache = transformer.forward(model, BLOCKS, shards, [step.x[lo:lo + mb]] * t, group)
                per_sample, douts = synthetic.loss(model, outs, step.y[lo:lo + mb], step.global_batch)
                losses.append(per_sample)
                group.close()
                _, shard_grads = transformer.backward(model, BLOCKS, shards, cache, douts, group, need_dx=False)
                for i, named in zip(ipus, shard_grads):
                    for name, value in named.items():
                        step.gradients[i][name] += value
                group.close()
        return losses, step.grads

    return run_step


if __name__ == "__main__":
    with ipu.attach(ipus_per_replica=TRAINING.t) as device:
        train(device, TRAINING, tensor_parallel(device))
