"""BERT-Large SL512 packed, the two held-out rows over 10%: four checks of where their gap sits, each from
published figures or Graphcore's code. bench/bench_planner.py prints them; docs/planner-fidelity.md ("SL512
packed: the sources, the counting and three checks", and "SL512 packed: the candidates checked again") says what
they show.
"""

from __future__ import annotations

import itertools
import statistics

from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.calibration import PODS, plan_of
from vipu.jobs.matmul_plan import CHANNEL_GROUP, HALF, _pieces, tile_cycles, training_shapes
from vipu.jobs.train_spec import plan_spec
from planner_shapes import StepLine

# graphcore.cn/performance-results, "Bow Platform - Training", the edition whose packed PopART rows the bench
# uses (SDK 3.1): PyTorch's BERT Large "Ph1 Pre-Training (SL128) - Packed" and "Ph2 Pre-Training (SL512) - Packed",
# SDK 3.1, batches 56,064 and 8,192 packs, sequences a second. Its configs (nlp/bert/pytorch/configs_pretraining.yml
# at c0239af, pretrain_large_{128,512}[_POD64]) have PopART's layout: layers_per_ipu [3, 7, 7, 7], micro-batch 8 at
# SL128 and 2 at SL512; run_pretraining.py counts packs x the packing ratio measured on the IPUs (modeling.py).
PYTORCH_PACKED = {16: (5_592, 1_969), 64: (18_494, 6_510)}
# The page's later edition lists the same two PyTorch rows again (Pod16 at SDK 3.3, Pod64 at SDK 3.2)
PYTORCH_PACKED_LATER = {16: (5_600, 1_973), 64: (18_442, 6_543)}
# The encoder IPUs' matmul_proportion (PyTorch's name for available_memory_proportion) of the configs PyTorch's
# benchmarks.yml runs for those rows (nlp/bert/pytorch/benchmarks.yml at c0239af,
# pytorch_bert_large_packed_pretrain_real_pod16 and _pod64: --config pretrain_large_{128,512}[_POD64];
# configs_pretraining.yml): SL128 then SL512. On a Pod64 the two are equal.
PYTORCH_AMP = {16: (0.25, 0.15), 64: (0.19, 0.19)}
# available_memory_proportion of the encoder IPUs in each PopART pre-training config (nlp/bert/popart/configs at
# c0239af; the pre-SDK 2.5 SL128 and SL384 configs are the same)
CONFIG_AMP = {"BERT-Large SL128": 0.25, "BERT-Large SL384": 0.40, "BERT-Large SL128 packed": 0.25,
              "BERT-Large SL512 packed": 0.21, "BERT-Base SL128": 0.28, "BERT-Base SL512": 0.28}
TILES, TILE_BYTES = 1472, 624 * 1024  # a Bow IPU's tiles and SRAM a tile
# Graphcore's MLPerf Training v2.0 BERT (closed, PopART) on a Bow Pod16: mlcommons/training_results_v2.0 (482ba246)
# Graphcore/results/ipu-pod16-POPART-closed/bert/result_2.txt, block_stop - block_start of each of its 17 training
# blocks, in ms. A block ends when the real sequences trained (input_mask's largest index a pack, summed) pass the
# next multiple of 175,000 (Graphcore/benchmarks/bert/implementations/popart/bert.py, Iteration and
# bert_train_loop), so the blocks hold 175,000 sequences on average; the time is the wall clock, host work included.
MLPERF_POD16_BLOCK_MS = (75888, 75932, 76017, 76030, 75914, 75952, 75945, 75963, 75942, 75920, 75916, 74585, 75950,
                         75922, 75896, 75897, 75902)
MLPERF_BLOCK_SEQUENCES = 175_000


def sl512_checks(points, planned) -> None:
    """The four checks; the planner's predictions are not changed by any of them."""
    _framework_ratios(points, planned)
    print()
    _ticks_and_fixed(points, planned)
    print()
    _memory_capped_plans(points)
    print()
    _another_layout(points, planned)


def find_point(points, model: str, ipus: int):
    return next(point for point in points if point.model == model and point.ipus == ipus)


def _framework_ratios(points, planned) -> None:
    """SL512 packed over SL128 packed, throughput in sequences a second, from the same edition: PopART's (the
    bench's rows), PyTorch's (the same layout in another framework, counted the same way; the later edition's
    figures after the slash) and the planner's. "AMP": PyTorch's encoder matmul_proportion at SL128 and SL512. On
    a Pod64 its two configs set the same proportion, so a ratio that stays put there is not the option's doing."""
    print("SL512 packed over SL128 packed (sequences a second), published in two frameworks and planned:")
    print(f"  {'system':<11} {'PopART':>7} {'PyTorch':>13} {'PyTorch AMP':>12} {'planned':>8}")
    for ipus, (sl128, sl512) in PYTORCH_PACKED.items():
        short, long = (find_point(points, f"BERT-Large SL{n} packed", ipus) for n in (128, 512))
        later = PYTORCH_PACKED_LATER[ipus][1] / PYTORCH_PACKED_LATER[ipus][0]
        amp = "{:.2f} / {:.2f}".format(*PYTORCH_AMP[ipus])
        print(f"  {PODS[ipus]:<11} {long.published / short.published:>7.3f} {sl512 / sl128:>7.3f} / {later:.3f}"
              f" {amp:>12} {planned(long).throughput / planned(short).throughput:>8.3f}")


def _ticks_and_fixed(points, planned) -> None:
    """Each BERT-Large pre-training config's step as a fixed part and m ticks (m micro-batches a replica), solved
    from its Pod16 and its Pod64 step (the same global batch over 4 and 16 replicas), published and planned alike."""
    print("BERT-Large pre-training steps as fixed + m x tick, from each config's Pod16 and Pod64 steps:")
    print(f"  {'model':<24} {'tick ms':>8} {'planned':>8} {'':>6} {'fixed s':>8} {'planned':>8}")
    for model in ("BERT-Large SL128", "BERT-Large SL384", "BERT-Large SL128 packed", "BERT-Large SL512 packed"):
        published, predicted, m = [], [], []
        for ipus in (16, 64):
            point = find_point(points, model, ipus)
            plan = planned(point)
            predicted.append(plan.step_s)
            published.append(plan.step_s * plan.throughput / point.published)
            m.append(point.spec["workload"]["layout"]["micro_batches"])
        (tick, fixed), (tick_p, fixed_p) = (_line(steps, m) for steps in (published, predicted))
        print(f"  {model:<24} {tick * 1e3:>8.3f} {tick_p * 1e3:>8.3f} {tick / tick_p - 1:>+6.1%}"
              f" {fixed:>8.3f} {fixed_p:>8.3f}")


def _line(steps: list[float], m: list[int]) -> tuple[float, float]:
    tick = (steps[0] - steps[1]) / (m[0] - m[1])
    return tick, steps[0] - m[0] * tick


def _memory_capped_plans(points) -> None:
    """The encoder layer's matmuls in training (vipu/jobs/matmul_plan.py's cost model) planned freely and with each
    split's piece of the inputs, the weights and the partials held under the config's available_memory_proportion
    of a tile: how poplin's planner reads the option (temporary memory a tile), with what counts as temporary an
    assumption. "none fits" where no split does. The last column plans the row with its matmul efficiency scaled by
    free / capped (a diagnostic: the planner does not price it)."""
    print("a layer's matmul cycles with each tile's piece under the config's available_memory_proportion:")
    print(f"  {'model':<24} {'system':<11} {'AMP':>5} {'free':>10} {'capped':>10} {'':>9} {'error':>7}"
          f" {'priced':>7}")
    cycles = {}
    for point in points:
        amp = CONFIG_AMP.get(point.model)
        if amp is None:
            continue
        if point.model not in cycles:
            workload = plan_spec(point.spec)[0].workload
            cycles[point.model] = (_layer_cycles(workload, None), _layer_cycles(workload, amp * TILE_BYTES))
        free, capped = cycles[point.model]
        line = StepLine(point)
        priced = f"{line.planned_error(free / capped):>+7.1%}" if capped else f"{'-':>7}"
        change = f"{capped / free - 1:>+9.1%}" if capped else f"{'none fits':>9}"
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {amp:>5.2f} {free:>10,.0f} {(capped or 0):>10,.0f}"
              f" {change} {line.error(1.0):>+7.1%} {priced}")


def _layer_cycles(workload, cap: float | None) -> float | None:
    model, b = workload.model, workload.layout.micro_batch
    tokens, h, s, d = b * model.seq_len, model.hidden, model.seq_len, model.hidden // model.heads
    ff = h * model.ffn_multiplier
    shapes = [(1, tokens, h, h)] * 4 + [(1, tokens, h, ff), (1, tokens, ff, h),
                                        (b * model.heads, s, d, s), (b * model.heads, s, s, d)]
    total = 0.0
    for shape in shapes:
        for g, m, k, n in training_shapes(*shape):
            best = [c for c in (_capped(g, m, k, n, cap), _capped(g, n, k, m, cap)) if c is not None]
            if not best:
                return None
            total += min(best)
    return total


def _capped(groups: int, rows: int, inputs: int, outputs: int, cap: float | None) -> float | None:
    """The busiest tile's cycles at the cheapest split whose piece fits under cap bytes (any split if None)."""
    cheapest = None
    for (gs, g), (ms, m), (ns, n), (ks, k) in itertools.product(
            _pieces(groups), _pieces(rows), _pieces(outputs, CHANNEL_GROUP), _pieces(inputs, CHANNEL_GROUP)):
        if gs * ms * ns * ks > TILES or (cap is not None and HALF * (g * m * k + g * k * n + g * m * n) > cap):
            continue
        cycles = tile_cycles(g, m, k, n, ms, ns, ks)
        cheapest = cycles if cheapest is None else min(cheapest, cycles)
    return cheapest


def mlperf_pod16_spec() -> dict:
    """Graphcore's MLPerf v2.0 BERT layout on a Bow Pod16, as near as a spec can state it. v2.0 publishes no Pod16
    config: result_2.txt logs a global batch of 3,072 sequences (packs x avg_seq_per_pack 2, bert.py) from 256
    micro-batches, which fits micro-batch 3 on 2 replicas of 8 IPUs, the layout of configs/pod64-closed.json
    (att_ffn_placement: the heads and one layer on IPU 0, 3 or 4 attention and feed-forward parts on each other IPU;
    vocabulary 30,912; LAMB state on chip; available_memory_proportion 1). Whole layers only: [1, 3, 3, 3, 4, 3, 4,
    3] puts 4 on the busiest IPUs, where the config puts 3 attention and 4 feed-forward parts."""
    return {"ipus": 16, "pod": PODS[16], "workload": {
        "kind": "train", "optimizer": "adam", "master_weights": False,
        "model": {"kind": "transformer", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 30912,
                  "mask_tokens": 76 + 2, "sequences_per_pack": 2.0},
        "layout": {"p": 8, "r": 2, "micro_batch": 3, "micro_batches": 256, "recompute": True, "rts": True,
                   "gradient_reduction": "per_tensor", "available_memory_proportion": 1.0,
                   "layers_per_stage": [1, 3, 3, 3, 4, 3, 4, 3]}}}


def _busiest_share(model: dict) -> float:
    """3 attention and 4 feed-forward parts over 4 layers, in forward FLOPs a token: attention 8 h^2 + 4 s h (the
    projections, then the scores and the weighted sum), feed-forward 16 h^2."""
    h, s = model["hidden"], model["seq_len"]
    attention, feed_forward = 8 * h * h + 4 * s * h, 16 * h * h
    return (3 * attention + 4 * feed_forward) / (4 * (attention + feed_forward))


def _another_layout(points, planned) -> None:
    """The same model and data on a Bow Pod16 in Graphcore's MLPerf v2.0 layout, published and planned, beside the
    bench's row: whether the planner ranks the two layouts as the published figures do. Not a bench row: the
    layout is inferred and a spec cannot place half a layer on an IPU. The planned figure is given with 4 whole
    layers on the busiest IPUs, and with their compute scaled to what they hold (_busiest_share)."""
    point = find_point(points, "BERT-Large SL512 packed", 16)
    mlperf = MLPERF_BLOCK_SEQUENCES / (statistics.median(MLPERF_POD16_BLOCK_MS) / 1e3)
    planned_row = planned(point).throughput
    spec = mlperf_pod16_spec()
    whole = plan_of(spec, DEFAULT)
    share = _busiest_share(spec["workload"]["model"])
    scaled = whole.throughput * whole.step_s / (whole.step_s - whole.time.compute_s * (1 - share))
    print("BERT-Large SL512 packed on a Bow Pod16, sequences a second: the table's config and Graphcore's MLPerf v2.0"
          " layout (median of 17 blocks), published and planned:")
    print(f"  table config: published {point.published:,.0f}, planned {planned_row:,.0f}"
          f" ({planned_row / point.published - 1:+.1%})")
    print(f"  MLPerf layout: published {mlperf:,.0f} ({mlperf / point.published - 1:+.1%} over the table config),"
          f" planned {whole.throughput:,.0f} with 4 whole layers on the busiest IPUs, {scaled:,.0f}"
          f" with their compute x {share:.3f} ({scaled / mlperf - 1:+.1%})")
