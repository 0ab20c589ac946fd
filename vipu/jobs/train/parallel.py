"""The parallel execution: the workload trained on its t x p x r IPUs as its layout says, data through the fabric.

What lives where: each IPU holds, as tensors on its transport (LocalTransport in-process, the machine actors with
RayTransport), one flat buffer of its weight shards ("params", vipu/sdk/nn/sharding.py FlatLayout), its optimiser state
("opt.momentum" or "opt.m", "opt.v") and, at the end of a step, its gradient accumulator ("grads"). The process
driving the step plays each IPU's tiles: it reads the IPU's weights at the start of the step (or, where they are
as it put them, checks them before the update: Fabric.expect), computes exactly that IPU's share (its shard of its
stage, its replica's micro-batches) from them, and every value that passes between IPUs goes through a collective
on the transport (data_path.py).

Which replicas run where comes from the job's poprun environment (poprun.py): each instance reads its
POPDIST_REPLICA_INDEX_OFFSET and POPDIST_NUM_LOCAL_REPLICAS and runs exactly those replicas, taking their samples
of the global batch; the instances' gradients meet in the data-parallel allreduce, as GCL's do across instances.
A step:

1. every instance runs, for each of its replicas, its m micro-batches through its p stages in the layout's schedule
   (vipu/sdk/nn/pipeline.py); each operation is a stage's forward or backward on its t shards (vipu/sdk/nn/mlp.py,
   transformer.py) with Megatron's tensor-parallel allreduces, and ends by sending its boundary activation
   forward (or gradient back); gradients accumulate per IPU over the micro-batches. Where the layout allows
   (and the IPUs have the SRAM for the stacked exchange buffers), a stage runs its m micro-batches stacked, each
   numpy call on all of them, and is timed per micro-batch as the schedule orders them (micro_batches.py);
2. the gradient accumulators are put on the IPUs and allreduced over the r replicas of each (stage, shard);
3. every IPU applies the optimiser (vipu/sdk/nn/optimizers.py) to its own buffers and puts them back: all replicas
   stay identical.
Where reads wait for the machine actors, a step of a simple layout needs nothing back from them, and what they
hold is checked every few steps (run_ahead.py).

Layout options, executed (the planner's memory_estimate.py and timing.py say the same):
- recompute (and phased, which recomputes each phase): a forward keeps each block's input only, and the backward
  runs each block's forward again before its backward (recompute.py): its FLOPs and tensor-parallel collectives
  are charged, and the activations held are the checkpoints plus one block's;
- rts (replicated tensor sharding, r > 1): each IPU holds the optimiser state of its replica's shard only
  (group.shard(n, r, replica) of its flat buffer); step 2 is a reduce-scatter of the gradients, step 3 updates
  that shard, then an all-gather of the weights over the replicas (the allreduce's two halves, the same rings).
  Phased, the weights are stored sharded too (Layout.shards_weights): each IPU keeps only its shard in Streaming
  Memory, and the step begins by all-gathering the whole flat buffer over the replicas, once for each use the Pod
  gathers it for (timing.WEIGHT_GATHERS: forward, recomputation, backward; each gather moves the data over the
  fabric and is charged), and ends by storing the updated shard back: no all-gather after the update;
- offload_optimizer: the state lives in the machines' Streaming Memory; the update loads it, applies the
  optimiser and stores it back;
- phased: weights and state live in Streaming Memory between steps, a transformer layer runs as an attention and
  a feed-forward block (blocks.py), and the blocks' inputs are stashed there too. Phased execution is
  batch-serialised, so the stages run gpipe order (Layout.order): every micro-batch's forward, then every
  backward, each stage holding all m micro-batches' stashed block inputs, as the planner counts. The execution
  loads the weights once, but the Pod streams what phased execution streams (timing.py): weights 4 times in
  (forward, recomputation, backward, update), gradients, state and every micro-batch's stashed block inputs in
  and out, gradients and weights out (weights and gradients as stored: with RTS the IPU's shard).
Each IPU also holds, reserved in its SRAM, its stage's activations as the planner counts them
(memory_estimate.stage_memory; phased: one block's), so a layout whose activations do not fit fails with the
machines' out-of-memory error, as it would on the Pod. What a step cost and held, streaming included, is counted
and reported by step_costs.py.

The loss is the mean over the global batch of the per-sample losses the last stages computed.

Arithmetic is fp32 for every model; an fp16 model is timed at fp16 FLOP rates and its collectives priced at fp16
bytes (data_path.PricedAs), and the memory reported per IPU is what the Pod would hold: weights, gradients and
activations in the model's dtype, the optimiser state as memory_estimate.py counts it (fp32, master weights included).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable, Sequence

import numpy as np

from vipu.fabric import LocalTransport
from vipu.fabric.group import shard
from vipu.hardware.topology import Topology
from vipu.jobs.layout import compute_share
from vipu.jobs.memory_estimate import stage_memory
from vipu.jobs.timing import WEIGHT_GATHERS, recomputes
from vipu.jobs.train.data_path import Fabric, PricedAs, owned
from vipu.jobs.train.micro_batches import stack_fits
from vipu.jobs.train.replica_batches import batchable, each_replica, replica_rows
from vipu.jobs.train.run_ahead import RunAhead, data_parallel_ahead, runs_ahead
from vipu.jobs.train.poprun import Instance, check_instances, local_environments, read_instances
from vipu.jobs.train.problem import check_runnable
from vipu.jobs.train.results import StepReport
from vipu.jobs.train.step_costs import StepCosts
from vipu.jobs.train.work import StageGroup, prices_on
from vipu.sdk.nn import mlp, optimizers as optim, transformer, transformer2d
from vipu.sdk.nn.pipeline import execution_order, stage_orders
from vipu.sdk.nn.sharding import FlatLayout, stage_axes, stage_blocks, take, unshard
from vipu.sdk.nn.synthetic import batch, init_params


class ParallelTrainer:
    """One job's training state on its IPUs: built with the initial weights put on every IPU, then run_step(n) per
    optimiser step, then close() to free the IPUs (run_training does all three)."""

    def __init__(self, workload, pod, first_ipu: int, transport, *, efficiency: float, partition_sync_s: float = 0.0,
                 clock: Callable[[], float] = time.perf_counter, topology: Topology | None = None,
                 instances: Sequence[Instance] | None = None):
        """instances: the job's poprun instances as read from their environments (poprun.read_instances); by
        default those of a stand-in partition (poprun.local_environments)."""
        check_runnable(workload)
        self.workload, self.model, self.lay, self.pod = workload, workload.model, workload.layout, pod
        if instances is None:
            instances = read_instances(local_environments(workload.layout, pod, first_ipu), workload.layout)
        self.instances = check_instances(instances, workload.layout)
        # I/O tiles compute nothing: the model's FLOPs spread over the other tiles, as the planner prices them
        self.efficiency, self.clock = efficiency * compute_share(workload.layout, pod), clock
        self.prices = prices_on(pod, self.efficiency)  # the compute sets priced so far (OpTimer): shapes repeat
        self.costs = StepCosts(self)  # what a step cost and held: its report (step_costs.py)
        self.cache_shares: dict = {}  # (replica, stage) -> its stacked cache's bytes per IPU (micro_batches.py)
        self._views: dict[int, tuple[np.ndarray, dict]] = {}  # IPU -> (its weights' buffer, their views)
        self.partition_sync_s = partition_sync_s  # one sync across the partition (assumptions.sync_s)
        mirror = LocalTransport() if transport.deferred else None  # Fabric._exchange
        if self.model.dtype != "fp32":
            transport = PricedAs(transport, np.float16)
            mirror = None if mirror is None else PricedAs(mirror, np.float16)
        self.fabric = Fabric(topology or Topology(pod), first_ipu, self.lay, transport, mirror)
        self.stage = mlp if self.model.kind == "mlp" else transformer2d if self.lay.t2 > 1 else transformer
        t, t2, p = self.lay.t, self.lay.t2, self.lay.p
        self.blocks = [stage_blocks(self.model, t, p, s, self.lay.phased) for s in range(p)]
        full = init_params(self.model, workload.seed)
        self.axes = [stage_axes(self.model, t, p, s, list(full), t2) for s in range(p)]
        self.layouts: dict[int, FlatLayout] = {}
        weights = {}
        for rep in self.replicas:
            for s in range(p):
                for k in range(self.lay.tp):
                    shards = {name: take(full[name], axis, t, k, t2) for name, axis in self.axes[s].items()}
                    ipu = self.fabric.ipu(rep, s, k)
                    self.layouts[ipu] = FlatLayout.of({name: a.shape for name, a in shards.items()})
                    weights[ipu] = self.layouts[ipu].pack(shards)
        self.weight_rows = replica_rows(self, weights)  # one IPU a replica: their weights as rows of one array
        self.state_names = [f"opt.{n}" for n in optim.state_names(workload.optimizer)]
        self.rts = self.lay.rts and self.lay.r > 1
        self.recompute = recomputes(self.lay)
        self.order = execution_order(stage_orders(self.lay.order, p, self.lay.micro_batches))  # every step's
        self.streamed = self.lay.offload_optimizer or self.lay.phased
        # the weights each IPU holds at a step's start are those put at the last one's end, unless RTS gathers them
        # or they stream: where a read waits (machine actors) the step continues with these and checks them
        # (Fabric.expect); so does a step whose replicas' weights are rows of one array (replica_rows). Otherwise
        # it reads them, no copy kept and none compared
        self.put_weights: dict[int, np.ndarray] | None = None
        self.weights_as_put = not (self.lay.phased or self.lay.shards_weights or self.rts) and (
            self.fabric.transport.deferred or self.weight_rows is not None)
        try:
            self._put_weights(weights)
            state = {name: {ipu: np.zeros(self.owned_range(ipu)[1] - self.owned_range(ipu)[0], dtype=w.dtype)
                            for ipu, w in weights.items()} for name in self.state_names}
            for name in self.state_names:
                self.fabric.put(name, state[name], handed=True)  # RunAhead keeps them: read-only, copied to update
                if self.streamed:
                    self.fabric.offload(name)
            # what a checking step reads back: the weights, the gradients' sums and each state buffer
            step_bytes = sum(w.nbytes for w in weights.values()) * (2 + len(self.state_names))
            ahead = runs_ahead(self.fabric, self.weights_as_put, self.streamed, step_bytes)
            self.ahead = RunAhead(self.fabric, state, clock) if ahead else None  # run_ahead.py
            if self.lay.phased:
                self.fabric.offload("params")
            activations = [int(stage_memory(workload, s).activations) for s in range(p)]
            self.fabric.reserve("activations", {self.fabric.ipu(rep, s, k): activations[s] for rep in self.replicas
                                                for s in range(p) for k in range(t)})
            # else one by one (micro_batches.py)
            self.stack_fits = stack_fits(self.fabric, workload, self._accumulators(weights)[0])
            self.replicas_as_one = batchable(self)  # replica_batches.py
        except BaseException:
            self.close()
            raise

    @property
    def ipus(self) -> list[int]:
        return self.fabric.ipus

    def owned_range(self, ipu: int) -> tuple[int, int]:
        """The elements of the IPU's flat buffers whose optimiser state it holds: all, or with RTS its replica's
        shard."""
        numel = self.layouts[ipu].size
        if not self.rts:
            return 0, numel
        return shard(numel, self.lay.r, (ipu - self.fabric.first) // (self.lay.tp * self.lay.p))

    def _stored(self, buffers: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """What each IPU keeps of its flat weight buffer between steps: all of it, or, where RTS shards the
        weights, its replica's shard."""
        if not self.lay.shards_weights:
            return buffers
        return {ipu: buffer[slice(*self.owned_range(ipu))] for ipu, buffer in buffers.items()}

    def _gather_weights(self) -> float:
        """RTS with the weights in Streaming Memory: from each IPU's shard ("params", loaded), the replicas
        all-gather the whole flat buffer into "params", once per use of the weights the Pod gathers them for
        (timing.WEIGHT_GATHERS); returns the gathers' virtual seconds."""
        shards = self.fabric.get("params", self.ipus)
        seconds = 0.0
        for _ in range(WEIGHT_GATHERS):
            whole = {}
            for ipu, mine in shards.items():
                whole[ipu] = np.zeros(self.layouts[ipu].size, dtype=mine.dtype)
                whole[ipu][slice(*self.owned_range(ipu))] = mine
            self.fabric.put("params", whole)
            seconds += self.fabric.data_parallel_half("params", "all-gather")
        return seconds

    @property
    def replicas(self) -> list[int]:
        """Every replica, instance by instance: each instance runs the ones its environment gives it."""
        return [rep for instance in self.instances for rep in instance.replicas]

    def instance_ipus(self, instance: Instance) -> list[int]:
        return [self.fabric.ipu(rep, s, k) for rep in instance.replicas for s in range(self.lay.p)
                for k in range(self.lay.tp)]

    def finish(self) -> None:
        """The checks still due (run_ahead.py), the weights and state the machines end with among them, and with
        them the machines' errors: before the run reports."""
        if self.ahead is not None:
            self.ahead.expect_held(self.put_weights)
        self.fabric.check_expected()

    def close(self) -> None:
        self.fabric.free_all()

    def weights(self, replica: int = 0) -> dict[str, np.ndarray]:
        """The whole model's current weights, reassembled from one replica's IPUs."""
        out = {}
        for s, axes in enumerate(self.axes):
            ipus = self.fabric.stage_ipus(replica, s)
            got = self.fabric.get("params", ipus)
            views = [self.layouts[ipu].views(np.asarray(got[ipu])) for ipu in ipus]
            out.update({name: unshard([v[name] for v in views], axis, self.lay.t2) for name, axis in axes.items()})
        return out

    # --- one optimiser step -------------------------------------------------------------------------------------
    def run_step(self, step: int) -> StepReport:
        started = self.clock()
        fabric, lay, model = self.fabric, self.lay, self.model
        fabric.log.clear()
        if lay.phased:
            fabric.load("params")
        gather_s = self._gather_weights() if lay.shards_weights else 0.0
        if self.put_weights is not None:  # checked before the update changes them in place, or a copy (run_ahead.py)
            if self.ahead is None:
                fabric.expect("params", self.put_weights)
            else:
                self.ahead.begin(self.put_weights)
            params = self.put_weights
        else:  # perhaps read-only: copied for the update (_update)
            params = fabric.get("params", self.ipus)
        views = {ipu: self._weight_views(ipu, params[ipu]) for ipu in self.ipus}
        grads, gviews = self._accumulators(params)
        x, y = batch(model, self.workload.global_batch, self.workload.seed, step)
        order = self.order
        losses: list[np.ndarray] = []
        compute = defaultdict(float)
        held = self.costs.holdings()
        worst = None  # (pipeline_s, stage busy, timers) of the critical stage of the slowest replica
        for rep, timers in each_replica(self, order, x, y, params, views, gviews, held, losses):
            for timer in timers.values():
                for ipu, seconds in timer.ipu_compute_s.items():
                    compute[ipu] += seconds
            line = self.costs.timeline(timers)
            if worst is None or line.pipeline_s > worst[0].pipeline_s:
                stage = max(range(len(line.busy_s)), key=line.busy_s.__getitem__)  # the first busiest
                worst = (line, stage, [timer for op, timer in timers.items() if op[0] == stage])

        if self.ahead is not None:
            reduced, dp_s = data_parallel_ahead(fabric, "grads", grads)
            later_grads = lambda: reduced  # noqa: E731
        else:
            fabric.put("grads", grads, handed=True)
            if self.rts:
                dp_s = fabric.data_parallel_half("grads", "reduce-scatter")
            else:
                dp_s = fabric.data_parallel_allreduce("grads")
            later_grads = fabric.get_later("grads", self.ipus)
        # the replicas' groups reduce together: one sync, and one before each gather of sharded weights
        collectives = 1 + WEIGHT_GATHERS if lay.shards_weights else 1
        dp_sync = collectives * self.partition_sync_s if lay.r > 1 else 0.0
        self._update(step, params, later_grads)
        if lay.shards_weights:
            dp_s += gather_s  # the gathers before use; the updated shards are stored, and gathered next step
        elif self.rts:
            dp_s += fabric.data_parallel_half("params", "all-gather")
        if lay.phased:
            fabric.offload("params")
        return self.costs.report(step, losses, worst, dp_s, dp_sync, compute, held, started, self.costs.streaming_s())

    def _weight_views(self, ipu: int, buffer: np.ndarray) -> dict[str, np.ndarray]:
        """The named views of the IPU's flat weight buffer, made again only when the buffer is another one (the
        weights as put are the same buffer every step, updated in place)."""
        kept = self._views.get(ipu)
        if kept is None or kept[0] is not buffer:
            kept = self._views[ipu] = (buffer, self.layouts[ipu].views(buffer))
        return kept[1]

    def _enter(self, xs: list[np.ndarray], g: StageGroup) -> list[np.ndarray]:
        """A stage's whole input (or output gradient) as its shards take it: with two tensor-parallel axes each its
        columns (transformer2d.enter); else unchanged."""
        return transformer2d.enter(xs, g) if self.lay.t2 > 1 else xs

    def _leave(self, xs: list[np.ndarray], g: StageGroup) -> list[np.ndarray]:
        return transformer2d.leave(xs, g) if self.lay.t2 > 1 else xs

    def _update(self, step: int, params: dict[int, np.ndarray],
                later_grads: Callable[[], dict[int, np.ndarray]]) -> None:
        """Apply the optimiser; the reduced gradients and the state are read together (one wait on machines)."""
        fabric, w = self.fabric, self.workload
        if self.streamed:
            for name in self.state_names:
                fabric.load(name)
        if self.ahead is None:
            later = {name: fabric.get_later(name, self.ipus) for name in self.state_names}
            grads = later_grads()
            fabric.check_expected()  # before the update: the wait for the gradients awaited those reads too
            state = {name: read() for name, read in later.items()}
        else:
            state, grads = self.ahead.state, later_grads()
            if self.ahead.checking:
                fabric.check_expected()
        new_state: dict[str, dict[int, np.ndarray]] = {name: {} for name in self.state_names}
        for ipu in self.ipus:
            lo, hi = self.owned_range(ipu)  # with RTS only this shard: the all-gather brings the others' updates
            mine = {name.removeprefix("opt."): owned(state[name][ipu], None) for name in self.state_names}
            params[ipu] = owned(params[ipu])
            optim.update(w.optimizer, w.learning_rate, step, params[ipu][lo:hi], grads[ipu][lo:hi], mine)
            for name in self.state_names:
                new_state[name][ipu] = mine[name.removeprefix("opt.")]
        self._put_weights(params)
        if self.ahead is not None:
            self.ahead.state = new_state
        for name in self.state_names:
            fabric.put(name, new_state[name], handed=True)  # updated on copies (owned): not written again
            if self.streamed:
                fabric.offload(name)

    def _accumulators(self, like: dict[int, np.ndarray]) -> tuple[dict[int, np.ndarray], dict]:
        """Zeroed gradient accumulators for a step, with each IPU's named views of them: fresh each step, as each
        step hands them over to the IPUs (put without a copy). np.zeros, not zeros_like: its pages are zeroed as
        they are first written (calloc), not all at once (the first ones are only put to try the SRAM)."""
        grads = {ipu: np.zeros(w.shape, w.dtype) for ipu, w in like.items()}
        return grads, {ipu: self.layouts[ipu].views(grads[ipu]) for ipu in grads}

    def _put_weights(self, buffers: dict[int, np.ndarray]) -> None:
        """Put the weights: copies where the trainer keeps them (weights_as_put), else handed over."""
        self.fabric.put("params", self._stored(buffers), handed=not self.weights_as_put)
        if self.weights_as_put:
            self.put_weights = {ipu: owned(a) for ipu, a in buffers.items()}


