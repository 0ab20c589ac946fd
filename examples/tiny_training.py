"""What the three tiny example programs share: a model's weights on the IPUs that run it, and its optimiser.

Each IPU keeps its shards of its stage's weights as one flat buffer ("params", vipu.sdk.nn.sharding.FlatLayout) and
its optimiser state beside it ("opt.momentum", or "opt.m" and "opt.v") in its tile SRAM, as the built-in `train`
workload keeps them. A step reads the weights back, the program computes its IPUs' share in numpy (the stage code of
vipu.sdk.nn, which counts every FLOP on its IPU), and the update writes them back: the numbers are those the IPUs
hold. Only the public SDK is used (vipu.sdk), so this is what any user's program may do.
"""

from __future__ import annotations

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


def say(report: dict) -> None:
    """One line per step, as the program's own output (vipu logs shows the controller's report too)."""
    print(f"step {report['step']:>3}  loss {report['loss']:.6f}  emulated step {report['emulated_step_s'] * 1e6:.1f} us",
          flush=True)
