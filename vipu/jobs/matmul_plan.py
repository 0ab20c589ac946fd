"""A poplin-style estimate of a grouped matmul's cycles on one IPU: how the split of its groups, rows and channels
over the tiles costs compute, exchange and the partials' reduction. A diagnostic for bench/bench_planner.py (its
table "poplin-style matmul plans"): the planner does not use it, because it does not close the gap it was built
to test (docs/planner-fidelity.md).

What it follows (graphcore/poplibs 7eac0f26):
- lib/poplin/MatMul.cpp getConvParams: a grouped matmul [G, M, K] x [G, K, N] is a 1x1 convolution with M as the
  batch, K input and N output channels, G convolution groups. The planner may swap the operands
  (lib/poplin/ConvPlan.cpp, the swapOperands transform among its candidates): here, the transpose
  [G, N, K] x [G, K, M] planned too, the cheaper kept.
- lib/poplin/ConvModel.cpp addEstimates: a plan splits the groups, rows and channels over the tiles (their product
  at most the tiles), and costs the busiest tile: its partials' calculation, the exchange of its inputs, weights
  and partials (addExchangeCycleEstimates), and the reduction of partials when the input channels are split
  (addReduceCycleEstimate). The planner keeps the cheapest plan.
- lib/poplin/PerformanceEstimation.hpp: the AMP 1x1 vertex (16 conv units, half inputs, half partials as the
  BERT configs' enable_half_partials): getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat (rows split
  over the 6 workers, 4 cycles a row past 3) and getConvPartial1x1SupervisorOuterLoopCycleEstimateHalfFloat (the
  per-group, per-input- and output-channel-group overheads), in 16-channel groups.
- lib/poplin/ExchangeEstimator.hpp: exchange at the target's bytes a cycle a tile, doubled for inputs when the
  output channels split by an even factor (a super tile receives them at once); inputs already on a tile
  (1 / the output-channel split) and weights (1 / the row split) are not exchanged.
Assumptions where poplar's target is not public: 4 exchange bytes a cycle a tile (the preset's 11 TB/s over 1,472
tiles at 1.85 GHz), 32 cycles to load the conv units' weights (16 units x 16 halves at 16 bytes a cycle), and
the reduction at 4 half partials a cycle plus a worker call each (poplibs' half binary ops' rate, as
vipu/sdk/nn/vector_cycles.py). Retention savings, padding and rearrangements are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

WORKERS = 6
CHANNEL_GROUP = 16  # AMP's input and output channels a group, half inputs and partials
WEIGHT_LOAD_CYCLES = 32
EXCHANGE_BYTES_PER_CYCLE = 4.0
HALF = 2  # bytes
AMP_MACS_PER_CYCLE = 64  # 16 conv units x 4 input elements: a Bow IPU's peak, 1,472 tiles x 128 FLOPs x 1.85 GHz


@dataclass(frozen=True)
class MatmulPlan:
    cycles: float  # the busiest tile's
    splits: tuple[int, int, int, int]  # groups, rows, output channels, input channels
    tiles_used: int

    def efficiency(self, groups: int, rows: int, inputs: int, outputs: int, tiles: int) -> float:
        """The matmul's MACs over what the IPU's tiles could do in its cycles at the AMP's peak."""
        return groups * rows * inputs * outputs / (self.cycles * tiles * AMP_MACS_PER_CYCLE)


def _worker_rows(rows: int, zeroing: bool) -> int:
    """getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat, 16 conv units: the rows split over the workers,
    the slowest worker's cycles times the workers."""
    cycles = []
    for worker in range(WORKERS):
        n = rows // WORKERS + (1 if worker < rows % WORKERS else 0)
        tail = 1 if zeroing else 2
        c = {0: 20 + tail, 1: 31 + tail, 2: 40 + tail}.get(n, (37 if zeroing else 38) + (n - 3) * 4)
        cycles.append(WORKERS * c)
    return max(max(cycles), min(cycles) + 14)


@lru_cache(maxsize=None)
def vertex_cycles(groups: int, rows: int, inputs: int, outputs: int) -> int:
    """getConvPartial1x1SupervisorOuterLoopCycleEstimateHalfFloat on one tile's piece (the common half path)."""
    in_groups, out_groups = math.ceil(inputs / CHANNEL_GROUP), math.ceil(outputs / CHANNEL_GROUP)
    later = 19 + 6 + WEIGHT_LOAD_CYCLES + _worker_rows(rows, False)
    first = 18 + 7 + WEIGHT_LOAD_CYCLES + _worker_rows(rows, True)
    return 50 + groups * (13 + (in_groups - 1) * (15 + out_groups * later) + 11 + out_groups * first)


def _pieces(size: int, grain: int = 1) -> list[tuple[int, int]]:
    """(split, size a tile) for every size a split can give, each with its smallest split."""
    grains = math.ceil(size / grain)
    best: dict[int, int] = {}
    for split in range(1, grains + 1):
        piece = math.ceil(grains / split) * grain
        best.setdefault(piece, split)
    return [(split, piece) for piece, split in best.items()]


@lru_cache(maxsize=None)
def _plan_one_order(groups: int, rows: int, inputs: int, outputs: int, tiles: int) -> MatmulPlan:
    best = None
    for g_split, g in _pieces(groups):
        for m_split, m in _pieces(rows):
            used = g_split * m_split
            if used > tiles:
                continue
            for n_split, n in _pieces(outputs, CHANNEL_GROUP):
                if used * n_split > tiles:
                    continue
                for k_split, k in _pieces(inputs, CHANNEL_GROUP):
                    if used * n_split * k_split > tiles:
                        continue
                    cycles = tile_cycles(g, m, k, n, m_split, n_split, k_split)
                    if best is None or cycles < best.cycles:
                        best = MatmulPlan(cycles, (g_split, m_split, n_split, k_split),
                                          used * n_split * k_split)
    return best


def tile_cycles(g: int, m: int, k: int, n: int, m_split: int, n_split: int, k_split: int) -> float:
    """The busiest tile's cycles for its piece: g groups of m rows, k inputs, n outputs."""
    super_tile = 2 if n_split % 2 == 0 else 1
    inputs = g * m * k * HALF * (1 - 1 / n_split) / (EXCHANGE_BYTES_PER_CYCLE * super_tile)
    weights = g * k * n * HALF * (1 - 1 / m_split) / EXCHANGE_BYTES_PER_CYCLE
    partials = g * m * n * HALF / EXCHANGE_BYTES_PER_CYCLE
    reduce = g * m * n / 4 + WORKERS * 26 if k_split > 1 else 0.0
    return vertex_cycles(g, m, k, n) + inputs + weights + partials + reduce


def plan_matmul(groups: int, rows: int, inputs: int, outputs: int, tiles: int) -> MatmulPlan:
    """The cheaper of the matmul's two operand orders, each at its cheapest split."""
    return min(_plan_one_order(groups, rows, inputs, outputs, tiles),
               _plan_one_order(groups, outputs, inputs, rows, tiles), key=lambda plan: plan.cycles)


def training_shapes(groups: int, rows: int, inputs: int, outputs: int) -> list[tuple[int, int, int, int]]:
    """A matmul's forward, its input gradient and its weight gradient, as (groups, rows, inputs, outputs)."""
    return [(groups, rows, inputs, outputs), (groups, rows, outputs, inputs), (groups, inputs, rows, outputs)]


def layer_efficiency(micro_batch: int, seq_len: int, hidden: int, heads: int, tiles: int) -> dict[str, float]:
    """An encoder layer's matmuls in training, estimated: the dense ones (Q, K, V apart as split_qkv, the output
    projection, the feed-forward pair) on micro-batch x seq_len rows, and attention's batched Q K^T and weighted
    sum of V in micro-batch x heads groups. Returns each class's efficiency (MACs over peak) and attention's share
    of the layer's matmul MACs."""
    tokens, head_size, groups = micro_batch * seq_len, hidden // heads, micro_batch * heads
    dense = [(1, tokens, hidden, hidden)] * 4 + [(1, tokens, hidden, 4 * hidden), (1, tokens, 4 * hidden, hidden)]
    attention = [(groups, seq_len, head_size, seq_len), (groups, seq_len, seq_len, head_size)]
    result = {}
    macs = {}
    for name, shapes in (("dense", dense), ("attention", attention)):
        cycles = work = 0.0
        for shape in shapes:
            for g, m, k, n in training_shapes(*shape):
                cycles += plan_matmul(g, m, k, n, tiles).cycles
                work += g * m * k * n
        result[name] = work / (cycles * tiles * AMP_MACS_PER_CYCLE)
        macs[name] = work
    result["attention_share"] = macs["attention"] / (macs["dense"] + macs["attention"])
    return result
