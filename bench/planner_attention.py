"""Issue 25's hypothesis for the two SL512 rows: attention's s^2 part costs more than the planner prices it, by its
shape. The part is Q K^T and the weighted sum of V, batched per head with 64-wide heads, and the scale, mask and
softmax over each head's s x s scores. Tested on pairs of published rows that share a framework, an SDK edition and
a layout and differ in sequence length, so the fit, the framework and the edition cancel. bench/bench_planner.py
prints the table; docs/planner-fidelity.md ("Attention's s^2 part by its shape") says what it shows.
"""

from __future__ import annotations

from vipu.hardware.pod_files import load_pod
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.calibration import PODS, plan_of, solve
from planner_shapes import crossing
from planner_sl512 import find_point

# (longer row, its shorter sibling, the systems both are published on): one framework and table edition each
PAIRS = (("BERT-Large SL512 packed", "BERT-Large SL128 packed", (16, 64)),
         ("BERT-Large SL384", "BERT-Large SL128", (16, 64)),
         ("BERT-Base SL512", "BERT-Base SL128", (16,)),
         ("BERT-Base SL384 (TF2)", "BERT-Base SL128 (TF2)", (16,)))
MULTIPLES = (1.0, 2.0, 3.0, 4.0, 6.0)
HALF = 2  # bytes
# poplibs' half ADD, SUBTRACT or MULTIPLY: a cycle and two of overhead a 4-wide vector (vipu/sdk/nn/vector_cycles.py)
HALF_BINARY_OP_CYCLES = 0.75


def s2_assumptions(multiple: float, head_size: int, efficiency: float):
    """The default assumptions with attention's s^2 part `multiple` times as dear. A score is one head's Q K^T
    entry: its matmuls are 4 x head_size FLOPs forward (Q K^T and the weighted sum of V) and twice that backward, at
    the matmul efficiency on the matrix units; its vector work is the assumptions' cycles. The matmuls' extra time
    is added to the cycles a score, which the planner charges on the same compute tiles."""
    ipu = load_pod(PODS[16]).ipu
    per_cycle = ipu.flops_per_tile_cycle("fp16") * efficiency
    extra = multiple - 1
    return DEFAULT.model_copy(update={
        "score_forward_cycles": multiple * DEFAULT.score_forward_cycles + extra * 4 * head_size / per_cycle,
        "score_backward_cycles": multiple * DEFAULT.score_backward_cycles + extra * 8 * head_size / per_cycle})


def refitted(multiple: float, head_size: int):
    """s2_assumptions with the fitted constants re-solved (the BERT-Large SL128 fit rows carry their own s^2 part).
    The matmuls' cycles a score depend on the efficiency the solve returns, so solve, then solve again with it."""
    efficiency = DEFAULT.compute_efficiency
    for _ in range(2):
        cycles = s2_assumptions(multiple, head_size, efficiency)
        fitted = solve(fixed={k: getattr(cycles, k) for k in ("score_forward_cycles", "score_backward_cycles")})
        efficiency = fitted["compute_efficiency"]
    return cycles.model_copy(update=fitted)


def attention_by_shape(points) -> None:
    """For each pair and system: the per-head matmul shape and the groups it is batched in (micro-batch x heads),
    the s^2 part's share of the longer row's compute (planned), the published and the planned ratio of the pair's
    throughputs, and the planned ratio's error as the s^2 part costs 1, 2, 3, 4 or 6 times the planned (the fit
    re-solved at each); "needs" is the multiple that plans the ratio as published."""
    shape = [find_point(points, pair[0], 16).spec["workload"]["model"] for pair in PAIRS]
    heads = {model["hidden"] // model["heads"] for model in shape}
    assert len(heads) == 1, "every pair's heads are 64 wide, so one figure a score serves them all"
    head_size = heads.pop()
    assumptions = {m: refitted(m, head_size) for m in MULTIPLES}
    at_x2 = s2_assumptions(2.0, head_size, DEFAULT.compute_efficiency)
    print("attention's s^2 part (Q K^T, the weighted sum of V, scale, mask and softmax) at a multiple of its"
          " planned cost, on pairs differing in sequence length (longer / shorter throughput):")
    print(f"  {'pair':<50} {'system':<10} {'head matmul':>13} {'groups':>6} {'s^2 share':>9} {'published':>9}"
          f" {'planned':>8}" + "".join(f" {f'x{m:g}':>7}" for m in MULTIPLES) + f" {'needs':>6}")
    for long_name, short_name, systems in PAIRS:
        for ipus in systems:
            long, short = find_point(points, long_name, ipus), find_point(points, short_name, ipus)
            model, layout = long.spec["workload"]["model"], long.spec["workload"]["layout"]
            one = plan_of(long.spec, DEFAULT)
            share = plan_of(long.spec, at_x2).time.compute_s / one.time.compute_s - 1
            published = long.published / short.published
            errors = [plan_of(long.spec, a).throughput / plan_of(short.spec, a).throughput / published - 1
                      for a in assumptions.values()]
            s = model["seq_len"]
            print(f"  {long_name + ' / ' + short_name:<50} {PODS[ipus]:<10}"
                  f" {f'{s}x{head_size}x{s}':>13} {layout['micro_batch'] * model['heads']:>6} {share:>9.1%}"
                  f" {published:>9.3f} {one.throughput / plan_of(short.spec, DEFAULT).throughput:>8.3f}"
                  + "".join(f" {e:>+7.1%}" for e in errors) + f" {crossing(MULTIPLES, errors):>6}")
    _bounds(head_size)


def _bounds(head_size: int) -> None:
    """A score's planned cycles a tick beside two bandwidth figures of the preset, each per half value a tile."""
    ipu = load_pod(PODS[16]).ipu
    per_tile = ipu.tiles * ipu.clock_hz
    matmul = 16 * head_size / (ipu.flops_per_tile_cycle("fp16") * DEFAULT.compute_efficiency)
    vector = 2 * DEFAULT.score_forward_cycles + DEFAULT.score_backward_cycles
    print(f"  a score a tick (recomputing): matmuls {matmul:.1f} tile cycles, vector work {vector:.2f}; a half"
          f" binary op at the SRAM bandwidth {3 * HALF / (ipu.sram_bytes_per_s / per_tile):.2f} a value (poplibs'"
          f" tables: {HALF_BINARY_OP_CYCLES:.2f}); a half value through the exchange"
          f" {HALF / (ipu.exchange_bytes_per_s / per_tile):.2f}")

