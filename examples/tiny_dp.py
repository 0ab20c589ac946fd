#!/usr/bin/env python3
"""Data parallel as a user's program (what examples/tiny_dp.yaml runs as the built-in `train` workload): a small
MLP replicated on the partition's IPUs, one replica per IPU; each replica trains on its samples of the global batch,
micro-batch by micro-batch, and the replicas allreduce their gradients once a step over the emulated IPU-Links.

Run it as a job: `vipu submit examples/tiny_dp.sh` (or under a launcher, each instance running its replicas).
"""

from __future__ import annotations

import vipu.sdk as ipu
from tiny_training import Step, Training, train
from vipu.sdk.nn import architectures, mlp, synthetic
from vipu.sdk.nn.sharding import stage_blocks

TRAINING = Training(model=architectures.MLP(layers=4, hidden=64, inputs=32, outputs=10), t=1, p=1, micro_batch=8,
                    micro_batches=2, steps=20, learning_rate=0.05, seed=1, optimizer="sgd")
BLOCKS = stage_blocks(TRAINING.model, 1, 1, 0)


def data_parallel(device):
    def run_step(step: Step):
        model, mb, losses = TRAINING.model, TRAINING.micro_batch, []
        for replica in device.replicas:
            ipu_ = step.weights.ipu(replica, 0, 0)
            group, weights = device.shard_group([ipu_]), [step.views[ipu_]]
            for j in range(TRAINING.micro_batches):  # forward then backward of each micro-batch (1F1B, one stage)
                lo = (replica * TRAINING.micro_batches + j) * mb
                outs, cache = mlp.forward(model, BLOCKS, weights, [step.x[lo:lo + mb]], group)
                per_sample, douts = synthetic.loss(model, outs, step.y[lo:lo + mb], step.global_batch)
                losses.append(per_sample)
                group.close()  # the forward's compute set
                _, shard_grads = mlp.backward(model, BLOCKS, weights, cache, douts, group, need_dx=False)
                for name, value in shard_grads[0].items():
                    step.gradients[ipu_][name] += value
                group.close()
        if device.num_replicas == 1:
            return losses, step.grads
        return losses, device.allreduce(step.grads, device.across_replicas(), name="grads")  # every replica's sum

    return run_step


if __name__ == "__main__":
    with ipu.attach(ipus_per_replica=1) as device:
        # the Device's view: PopDist's under a launcher, the program's own replication without one (where PopDist's
        # functions give its defaults, isPopdistEnvSet() False)
        print(f"instance {device.instance_index} of {device.num_instances}: replicas {device.replicas.start}-"
              f"{device.replicas.stop - 1} of {device.num_replicas} (launched: {ipu.isPopdistEnvSet()})", flush=True)
        train(device, TRAINING, data_parallel(device))
