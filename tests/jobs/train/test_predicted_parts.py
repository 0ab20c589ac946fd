"""Each part of the step time a job reports equals the part `vipu plan` predicts for it, layout by layout.

The model is a transformer whose layers are all alike, so its stages are balanced, as the planner's are (an MLP's
first stage is lighter: it skips its input's gradient). What is left between the two sides, and pinned here:
- compute (and the bubble, which is the other stage's compute and exchanges): the emulator counts each BSP compute
  set in whole tile cycles (workers/bsp.py), the planner in FLOPs; at most one cycle per compute set;
- data-parallel allreduce and streaming with t > 1: each IPU holds the layer norms and the output biases whole
  (Megatron replicates them, vipu/sdk/nn/sharding.py), the planner 1/(t p) of every weight (its stated balanced-shard
  assumption, memory_estimate.py's weight count); at most the held-to-planned parameter ratio (0.77% here).

Regression: the planner priced gpipe's bubble as 1F1B's (the other stages' ticks), but in gpipe order every forward
crosses the pipeline before any backward, and with the first stage's forward (which sends) and the last stage's
backward (which sends back) the slowest, the emulator idled 66% longer (t=1 p=2: 5.34 us, planned 3.22 us). Phased
execution runs gpipe order (batch serialisation), so it is priced the same way.
"""

from __future__ import annotations

import itertools

import pytest

from tests.jobs.train.builders import pod, run, transformer, workload

H, LAYERS = 64, 2
MODEL = transformer(layers=LAYERS, hidden=H, heads=4, seq_len=16)
EXACT = ("tensor-parallel collectives", "pipeline sends", "batch-norm statistics", "syncs", "host I/O")
CYCLE_S = 1 / 1.85e9  # bow-2000.yaml clock

OPTIONS = {"plain": {}, "gpipe": {"schedule": "gpipe"}, "recompute": {"recompute": True}, "phased": {"phased": True},
           "rts": {"rts": True}, "rts+phased": {"rts": True, "phased": True}}
GRID = [(t, p, r, name) for t, p, r in itertools.product((1, 2), repeat=3) for name in OPTIONS
        if r > 1 or not OPTIONS[name].get("rts")]


def compute_sets_per_tick(t: int, p: int, recomputes: bool) -> int:
    """The forward and the backward pass; with t > 1 one set before each of Megatron's allreduces (2 a layer and
    pass)."""
    return 2 if t == 1 else LAYERS // p * 2 * (3 if recomputes else 2)


def held_to_planned(t: int) -> float:
    """Parameters an IPU of a t-way tensor group holds, over the planner's 1/t of them: Q, K, V, the output
    projection and the feed-forward split t ways; two layer norms (gain, bias) and two output biases whole."""
    layer = 12 * H * H + 13 * H
    return ((layer - 6 * H) / t + 6 * H) / (layer / t)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("t, p, r, option", GRID, ids=[f"t{t}p{p}r{r}-{o}" for t, p, r, o in GRID])
def test_each_emulated_part_is_the_planned_one(t, p, r, option, dtype):
    options = OPTIONS[option]
    m = 2
    result = run(workload({**MODEL, "dtype": dtype}, "adam", steps=1, t=t, p=p, r=r, micro_batch=4,
                          micro_batches=m, **options))
    planned, emulated = result.predicted_parts, result.emulated_parts
    for part in EXACT:
        assert emulated[part] == pytest.approx(planned[part], rel=1e-12, abs=1e-18), part
    sets = compute_sets_per_tick(t, p, bool(options.get("recompute") or options.get("phased")))
    assert 0 <= emulated["compute"] - planned["compute"] <= m * sets * CYCLE_S
    assert 0 <= emulated["pipeline bubble"] - planned["pipeline bubble"] <= (p - 1) * sets * CYCLE_S
    for part in ("data-parallel allreduce", "streaming memory"):
        if t == 1:
            assert emulated[part] == pytest.approx(planned[part], rel=1e-12, abs=1e-18), part
        else:
            assert planned[part] <= emulated[part] <= planned[part] * held_to_planned(t), part
    assert sum(emulated.values()) == pytest.approx(result.emulated_step_s, rel=1e-12)


def test_a_tensor_parallel_pipeline_send_takes_the_route_between_its_ipus():
    """Regression (t=2 p=2 r=2): the planner sent each shard's half of the boundary over one IPU-Link hop, but
    stage 0 is IPUs 0-1 and stage 1 IPUs 2-3 of a machine's ring 0-1-2-3-0: IPU 0 to IPU 2 is 2 hops, and the
    emulator paid both (7.02 us emulated, 5.02 us planned for 2 micro-batches)."""
    result = run(workload(MODEL, "adam", steps=1, t=2, p=2, r=2, micro_batch=4, micro_batches=2))
    half = 16 * 4 * H * 4 / 2  # b s h fp32 values, a shard's half: 8,192 B
    scatter = 2e-6 + half / 32e9  # 2 hops of 1 us, each shard on its own links at 32 GB/s
    gather = 1e-6 + half / 32e9  # the receivers swap halves: 1 hop
    assert result.predicted_parts["pipeline sends"] == pytest.approx(2 * (scatter + gather), rel=1e-12)
    assert result.emulated_parts["pipeline sends"] == pytest.approx(2 * (scatter + gather), rel=1e-12)


GRID_2D = [(t, t2, p, r, name) for t, t2, p, r in ((2, 2, 1, 1), (1, 2, 1, 2), (2, 2, 2, 1), (2, 2, 1, 2))
           for name in ("plain", "recompute", "rts+phased") if r > 1 or name != "rts+phased"]


@pytest.mark.parametrize("t, t2, p, r, option", GRID_2D, ids=[f"t{t}x{t2}p{p}r{r}-{o}" for t, t2, p, r, o in GRID_2D])
def test_two_tensor_axes_emulated_parts_are_the_planned_ones(t, t2, p, r, option):
    """Two tensor-parallel axes (tensor_axes.py): the collectives and syncs to rounding; compute and the bubble to
    a tile cycle per compute set (4 a layer and pass), attention counted whole on each IPU of a t2 group."""
    m = 2
    result = run(workload(MODEL, "adam", steps=1, t=t, t2=t2, p=p, r=r, micro_batch=4, micro_batches=m,
                          **OPTIONS[option]))
    planned, emulated = result.predicted_parts, result.emulated_parts
    for part in ("tensor-parallel collectives", "pipeline sends", "syncs"):
        assert emulated[part] == pytest.approx(planned[part], rel=1e-9, abs=1e-18), part
    sets = LAYERS // p * 4 * (3 if option != "plain" else 2)
    assert 0 <= emulated["compute"] - planned["compute"] <= m * sets * CYCLE_S
    assert 0 <= emulated["pipeline bubble"] - planned["pipeline bubble"] <= (p - 1) * sets * CYCLE_S + 1e-15
