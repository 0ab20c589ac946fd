"""One pipeline operation (a stage's forward or backward of one micro-batch) on its stage's t IPUs: what the shards
compute, the collectives between them, and the emulated time of it all.

The stage code (vipu/sdk/nn/mlp.py, transformer.py) is written once for all t shards ("SPMD", vipu/sdk/nn/spmd.py): it computes each
shard from that shard's own weights and inputs, and calls StageGroup.allreduce / all_gather / send, which run on the
fabric (data_path.py). Every matmul is counted into the current BSP compute set of the shard's IPU; a collective ends
the compute set. The operation's emulated time is, in order:
- each compute set: vipu.workers.bsp's cost rules (the busiest IPU's tile cycles, then the sync), with each IPU's
  FLOPs spread over its tiles at the planner's calibrated efficiency (assumptions.compute_efficiency: the same
  figure the prediction uses, so emulation and prediction differ only where the execution does);
- each collective: its CollectiveResult.virtual_s (the fabric's step-by-step alpha-beta price), after a sync
  across the whole partition (the planner's assumptions.sync_s: the same figure as the prediction's syncs).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Hashable, Mapping

import numpy as np

from vipu.jobs.train.data_path import PP, TP, Fabric
from vipu.sdk.nn.kernels import matmul_flops, rows, wgrad, wgrad_flops
from vipu.workers import bsp


def compute_set_times(pod, dtype: str, flops: Mapping[int, float], efficiency: float,
                      cycles: Mapping[int, float] | None = None) -> bsp.StepTimes:
    """One BSP compute set in which IPU i does flops[i] FLOPs, spread evenly over its tiles at `efficiency` of the
    peak rate (the planner's calibrated figure), and cycles[i] tile cycles of vector work spread over them too: its
    time (the busiest IPU, then the sync) and each IPU's phases. A program's session prices its compute sets with
    this too (vipu/jobs/sessions)."""
    tiles, per_cycle = pod.ipu.tiles, pod.ipu.flops_per_tile_cycle(dtype)
    per_tile = {ipu: n / tiles / efficiency for ipu, n in flops.items()}
    for ipu, n in (cycles or {}).items():  # as FLOPs at the peak rate, which the tile's cycles are counted at
        per_tile[ipu] = per_tile.get(ipu, 0.0) + n / tiles * per_cycle
    return bsp.compute_only(pod.ipu, pod.links.ipu_link, dtype, per_tile)


PRICES_KEPT = 4096  # distinct compute sets kept priced per Pod and efficiency (a training loop's: a few dozen)
_prices: dict[tuple, dict] = {}


def kept_for(tables: dict, key: Hashable) -> dict:
    """tables[key], made empty the first time; at most 16 kept (the Pods, and efficiencies, a process runs on)."""
    table = tables.get(key)
    if table is None:
        if len(tables) >= 16:
            tables.clear()
        table = tables[key] = {}
    return table


def prices_on(pod, efficiency: float) -> dict:
    """The compute sets priced so far on `pod` at `efficiency` (OpTimer.prices), kept for every run there: a job's
    first step then prices only the shapes no run before it had."""
    return kept_for(_prices, (pod, efficiency))


class OpTimer:
    """The emulated time of one operation: compute sets and collectives, in order (BSP: never overlapped).

    prices: compute set (dtype, ((IPU, FLOPs), ...)) -> (its seconds, ((IPU, compute seconds), ...)), shared by the
    timers of one run so that a compute set is priced once however often its shape repeats (every micro-batch, every
    step after the first)."""

    def __init__(self, pod, dtype: str, efficiency: float, partition_sync_s: float = 0.0,
                 prices: dict | None = None):
        self.pod, self.dtype, self.efficiency = pod, dtype, efficiency
        self.partition_sync_s = partition_sync_s
        self.prices = {} if prices is None else prices
        self.pending: dict[int, float] = defaultdict(float)  # IPU -> FLOPs of the open compute set
        self.pending_cycles: dict[int, float] = defaultdict(float)  # IPU -> its vector work's tile cycles
        self.ipu_compute_s: dict[int, float] = defaultdict(float)
        self.compute_s = 0.0  # compute sets: the busiest IPU's compute plus the sync, summed
        self.tensor_parallel_s = 0.0
        self.send_s = 0.0
        self.sync_s = 0.0  # the partition-wide syncs before its collectives

    def flops(self, ipu: int, n: float) -> None:
        self.pending[ipu] += n

    def vector(self, ipu: int, cycles: float) -> None:
        self.pending_cycles[ipu] += cycles

    def close(self) -> None:
        if not self.pending and not self.pending_cycles:
            return
        key = (self.dtype, tuple(self.pending.items()), tuple(self.pending_cycles.items()))
        priced = self.prices.get(key)
        if priced is None:
            if len(self.prices) >= PRICES_KEPT:
                self.prices.clear()
            times = compute_set_times(self.pod, self.dtype, self.pending, self.efficiency, self.pending_cycles)
            priced = self.prices[key] = (times.step_s, tuple((ipu, t.compute_s) for ipu, t in times.ipus.items()))
        step_s, per_ipu = priced
        self.compute_s += step_s
        for ipu, seconds in per_ipu:
            self.ipu_compute_s[ipu] += seconds
        self.pending.clear()
        self.pending_cycles.clear()

    def collective(self, kind: str, seconds: float) -> None:
        if seconds <= 0:  # a collective within one IPU (t = 1) moves nothing: no exchange ends the compute set
            return
        self.close()
        self.sync_s += self.partition_sync_s
        if kind == TP:
            self.tensor_parallel_s += seconds
        else:
            self.send_s += seconds

    @property
    def total_s(self) -> float:
        self.close()
        return self.compute_s + self.tensor_parallel_s + self.send_s + self.sync_s


class StageGroup:
    """The t shards of one stage of one replica, as the stage code sees them.

    stacked: how many micro-batches the arrays hold, one after another along their first axis (micro_batches.py).
    The numpy calls then run once for them all; the timer counts one micro-batch's FLOPs and collectives (every
    micro-batch's are the same), and the fabric logs and records each micro-batch's collective (Fabric._moved)."""

    def __init__(self, fabric: Fabric, replica: int, stage: int, timer: OpTimer, stacked: int = 1):
        self.fabric, self.replica, self.stage, self.timer = fabric, replica, stage, timer
        self.stacked = stacked
        self.t, self.t1, self.t2 = fabric.t, fabric.t1, fabric.t2
        self.ipus = fabric.stage_ipus(replica, stage)
        self.group = fabric.tensor_group(replica, stage)

    def mm(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a @ b on shard k, counted. Stacked, one batched matmul of each micro-batch's rows: BLAS may round a row
        otherwise when it has more rows beside it (so does OpenBLAS's sgemm with a transposed b), and a stacked run
        must give one by one's numbers to the bit (a program of the SDK runs one micro-batch at a time)."""
        self.flops(k, matmul_flops(a, b))
        if self.stacked > 1 and a.ndim == 2:  # with more axes each sample's rows are a matmul of their own already
            return np.matmul(a.reshape(self.stacked, -1, a.shape[-1]), b).reshape(-1, b.shape[-1])
        return a @ b

    def wgrad(self, k: int, a: np.ndarray, dy: np.ndarray) -> np.ndarray:
        """Stacked, each micro-batch's gradient (one batched matmul), added in order (kernels.wgrad)."""
        self.flops(k, wgrad_flops(a, dy))
        return wgrad(a, dy, self.stacked)

    def rows(self, k: int, dy: np.ndarray) -> np.ndarray:
        return rows(dy, self.stacked)

    def flops(self, k: int, n: float) -> None:
        # n is exactly `stacked` times one micro-batch's (whole numbers below 2**53): the quotient is exact too
        self.timer.flops(self.ipus[k], n / self.stacked if self.stacked > 1 else n)

    def vector(self, k: int, cycles: float) -> None:
        # stacked: `stacked` micro-batches' cycles, one micro-batch's counted, as flops()
        self.timer.vector(self.ipus[k], cycles / self.stacked if self.stacked > 1 else cycles)

    def allreduce(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        out, seconds = self.fabric.allreduce(self.group, parts, self.stacked)
        self.timer.collective(TP, seconds)
        return out

    def all_gather(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        out, seconds = self.fabric.all_gather(self.group, pieces, axis, self.stacked)
        self.timer.collective(TP, seconds)
        return out

    def allreduce_t(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        out, seconds = self.fabric.allreduce_t(self.replica, self.stage, parts)
        self.timer.collective(TP, seconds)
        return out

    def allreduce_t2(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        out, seconds = self.fabric.allreduce_t2(self.replica, self.stage, parts)
        self.timer.collective(TP, seconds)
        return out

    def all_gather_t2(self, pieces: list[np.ndarray], axis: int) -> list[np.ndarray]:
        out, seconds = self.fabric.all_gather_t2(self.replica, self.stage, pieces, axis)
        self.timer.collective(TP, seconds)
        return out

    def send(self, dst_stage: int, arrays: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
        """What stage dst_stage receives, read when called (Fabric.send)."""
        out, seconds = self.fabric.send(self.replica, self.stage, dst_stage, arrays, self.stacked)
        self.timer.collective(PP, seconds)
        return out
