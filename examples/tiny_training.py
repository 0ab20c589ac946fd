"""What the three tiny example programs share: a model's weights on the IPUs that run it, its optimiser, and the
loop of steps around each example's own parallel code.

Each IPU keeps its shards of its stage's weights as one flat buffer ("params", vipu.sdk.nn.sharding.FlatLayout) and
its optimiser state beside it ("opt.momentum", or "opt.m" and "opt.v") in its tile SRAM, as the built-in `train`
workload keeps them. A step reads the weights back, the program computes its IPUs' share in numpy (the stage code of
vipu.sdk.nn, which counts every FLOP on its IPU), and the update writes them back: the numbers are those the IPUs
hold. Only the public SDK is used (vipu.sdk), so this is what any user's program may do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from vipu.sdk.nn import optimizers, synthetic
from vipu.sdk.nn.sharding import FlatLayout, stage_axes, take


class Weights:
    """The weights and optimiser state of this instance's replicas, t shards x p stages each, on their IPUs."""

    def __init__(self, device, model, t: int, p: int, seed: int, optimizer: str, learning_rate: float):
        self.device, self.optimizer, self.learning_rate = device, optimizer, learning_rate
        self.t = t
        full = synthetic.init_params(model, seed)
        axes = [stage_axes(model, t, p, s, list(full)) for s in range(p)]
        self.layouts: dict[int, FlatLayout] = {}
        packed = {}
        for replica in device.replicas:
            for s in range(p):
                for k in range(t):
                    ipu = self.ipu(replica, s, k)
                    shards = {name: take(full[name], axis, t, k) for name, axis in axes[s].items()}
                    self.layouts[ipu] = FlatLayout.of({name: a.shape for name, a in shards.items()})
                    packed[ipu] = self.layouts[ipu].pack(shards)
        self.ipus = list(packed)
        self.state = [f"opt.{name}" for name in optimizers.state_names(optimizer)]
        device.put("params", packed)
        for name in self.state:
            device.put(name, {ipu: np.zeros(self.layouts[ipu].size, np.float32) for ipu in self.ipus})

    def ipu(self, replica: int, stage: int, shard: int) -> int:
        """Tensor shards innermost, then stages, within the replica's IPUs."""
        return self.device.replica_ipus(replica)[stage * self.t + shard]

    def read(self) -> tuple[dict, dict, dict, dict]:
        """This step's weights from the IPUs, zeroed gradient buffers like them, and each as named views."""
        params = {ipu: np.array(a, dtype=synthetic.DTYPE) for ipu, a in self.device.get("params", self.ipus).items()}
        grads = {ipu: np.zeros_like(a) for ipu, a in params.items()}
        return (params, {ipu: self.layouts[ipu].views(a) for ipu, a in params.items()}, grads,
                {ipu: self.layouts[ipu].views(a) for ipu, a in grads.items()})

    def update(self, step: int, params: dict, grads: dict) -> None:
        """Apply the optimiser on every IPU to its own buffers, and put them back."""
        state = {name: self.device.get(name, self.ipus) for name in self.state}
        new = {name: {} for name in self.state}
        for ipu in self.ipus:
            mine = {name.removeprefix("opt."): np.array(state[name][ipu]) for name in self.state}
            optimizers.update(self.optimizer, self.learning_rate, step, params[ipu], grads[ipu], mine)
            for name in self.state:
                new[name][ipu] = mine[name.removeprefix("opt.")]
        self.device.put("params", params)
        for name in self.state:
            self.device.put(name, new[name])


@dataclass(frozen=True)
class Training:
    """What an example trains and how: its model, its replica's t shards x p stages, micro-batching, optimiser."""

    model: object
    t: int
    p: int
    micro_batch: int
    micro_batches: int
    steps: int
    learning_rate: float
    seed: int
    optimizer: str


@dataclass
class Step:
    """One optimiser step as an example's own code sees it: its samples, and each IPU's weights and gradient buffers
    by name (write the gradients into `gradients`; `grads` are the same buffers, flat)."""

    x: np.ndarray
    y: np.ndarray
    global_batch: int
    weights: Weights
    views: dict
    grads: dict
    gradients: dict


def train(device, training: Training, run_step: Callable[[Step], tuple[list, dict]], steps: int | None = None):
    """The loop every example runs: for each step, the samples and the weights from the IPUs; then run_step (the
    example's parallelism: its replicas' micro-batches) gives the samples' losses, in sample order, and the gradients
    to apply; the optimiser updates the IPUs' weights and the step is reported. Returns the reports."""
    global_batch = training.micro_batch * training.micro_batches * device.num_replicas
    weights = Weights(device, training.model, training.t, training.p, training.seed, training.optimizer,
                      training.learning_rate)
    reports = []
    for step in range(training.steps if steps is None else steps):
        x, y = synthetic.batch(training.model, global_batch, training.seed, step)
        params, views, grads, gradients = weights.read()
        losses, grads = run_step(Step(x, y, global_batch, weights, views, grads, gradients))
        weights.update(step, params, grads)
        report = device.report_step(np.concatenate(losses))
        print(f"step {report['step']:>3}  loss {report['loss']:.6f}  emulated step"
              f" {report['emulated_step_s'] * 1e6:.1f} us", flush=True)  # vipu logs shows the full report too
        reports.append(report)
    return reports
