#!/usr/bin/env python3
"""Pipeline parallel as a user's program (what examples/tiny_pp.yaml runs as the built-in `train` workload): an
8-layer MLP split into 4 stages, one per IPU, 8 micro-batches a step in the 1F1B schedule. Each stage's operations
run in its own order; a stage's input comes from the previous stage's IPU over the emulated IPU-Links, and a stage
that waits for it idles in virtual time: the pipeline's bubble, which `vipu logs` reports.

Run it as a job: `vipu submit examples/tiny_pp.sh`.
"""

from __future__ import annotations

import vipu.sdk as ipu
from tiny_training import Step, Training, train
from vipu.sdk.nn import architectures, mlp, synthetic
from vipu.sdk.nn.pipeline import execution_order, stage_orders
from vipu.sdk.nn.sharding import stage_blocks

TRAINING = Training(model=architectures.MLP(layers=8, hidden=64, inputs=32, outputs=10), t=1, p=4, micro_batch=8,
                    micro_batches=8, steps=20, learning_rate=0.05, seed=2, optimizer="sgd")
BLOCKS = [stage_blocks(TRAINING.model, 1, TRAINING.p, s) for s in range(TRAINING.p)]
ORDER = execution_order(stage_orders("1f1b", TRAINING.p, TRAINING.micro_batches))  # every stage's ops, in order


def pipeline(device):
    def run_step(step: Step):
        model, mb, last, losses = TRAINING.model, TRAINING.micro_batch, TRAINING.p - 1, []
        for replica in device.replicas:
            stages = [device.shard_group([step.weights.ipu(replica, s, 0)]) for s in range(TRAINING.p)]
            caches, douts = {}, {}
            for s, kind, j in ORDER:
                group, ipu_ = stages[s], stages[s].ipus[0]
                lo = (replica * TRAINING.micro_batches + j) * mb
                if kind == "F":
                    xs = [step.x[lo:lo + mb]] if s == 0 else group.recv(stages[s - 1])  # waits for its input
                    outs, caches[(s, j)] = mlp.forward(model, BLOCKS[s], [step.views[ipu_]], xs, group)
                    if s == last:
                        per_sample, douts[j] = synthetic.loss(model, outs, step.y[lo:lo + mb], step.global_batch)
                        losses.append(per_sample)
                    else:
                        group.send(stages[s + 1], outs)
                else:
                    ds = douts.pop(j) if s == last else group.recv(stages[s + 1])
                    dxs, shard_grads = mlp.backward(model, BLOCKS[s], [step.views[ipu_]], caches.pop((s, j)), ds,
                                                    group, need_dx=s > 0)
                    for name, value in shard_grads[0].items():
                        step.gradients[ipu_][name] += value
                    if s > 0:
                        group.send(stages[s - 1], dxs)
                group.close()  # the operation's last compute set
        return losses, step.grads

    return run_step


if __name__ == "__main__":
    with ipu.attach(ipus_per_replica=TRAINING.p) as device:
        train(device, TRAINING, pipeline(device))
