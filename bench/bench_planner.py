"""`vipu plan` against published Bow Pod training throughput: the points the constants are fitted to, and the
held-out rest.

Run: .venv/bin/python bench/bench_planner.py
Goal (issue 25): on the held-out points, median absolute error at most 5%, none over 10%.

Every row is a job spec as a user would write it (Graphcore's config, translated field by field), written to a YAML
file and planned by vipu.jobs.command.plan_file with the default assumptions: what `vipu plan SPEC` runs. Five published
results fix the five fitted constants (vipu/jobs/calibration.py: three MLPerf ResNet-50 runs, BERT-Large SL128 on a
Pod16 and a Pod64); nothing is refitted per model or system. Published figures:
- MLPerf: mlcommons/training_results_v2.0 (commit 482ba246) Graphcore/results/ipu-pod{16,64,128,256}-TF1-closed/
  resnet/result_<n>.txt, ImageNet's 1,281,167 images over the median epoch (calibration.py);
- "table": Graphcore's performance-results page, "Bow Platform - Training" (graphcore.ai/performance-results,
  mirrored at graphcore.cn/performance-results; the Pre-SDK2.5 edition for ResNet-50, ViT and unpacked
  BERT-Large, the SDK 3.1 edition for packed BERT-Large and BERT-Base), throughput in items (images, sequences) a
  second, with the global batch each row states;
- configs: graphcore/examples. ResNet-50: the TensorFlow 1 CNN application's configs.yml,
  mk2_resnet50_mlperf_pod16_bs20 (16 x 20 x 6 = 1,920), pod64_bs20 (64 x 20 x 2 = 2,560), pod256_lars
  (256 x 20 x 2 = 10,240): recomputation, batch norm pooled over pairs of replicas, 50 MiB gradient buffers,
  available_memory_proportion 0.15 (pod64_bs20: 0.145).
  BERT: nlp/bert/popart/configs/pretrain_{large,base}_{128,384,512}.json and packed/packed_pretrain_large_
  {128,512}.json (layers_per_ipu, mask_tokens, micro_batch_size, global_batch_size; replication 4 per Pod16, so
  16 per Pod64 at the same global batch). ViT: vision/vit/pytorch/configs.yml b16_in1k_pretrain_lamb (micro-batch
  8, 4 IPUs a replica, layers_per_ipu [3, 3, 3, 3], RTS, LAMB; global batch 65,536 as the table states). SQuAD:
  nlp/bert/popart/configs/squad_large_384.json (graphcore/examples c0239af, the SDK 3.1 release), the SDK 3.1
  edition's "Fine-Tuning (SL384 - SQuAD)" row. BERT-Base in TensorFlow 2: the SDK 3.x edition's TensorFlow2 rows
  (SDK 3.3) and nlp/bert/tensorflow2/configs/pretrain_base_{128_phase1,384_phase2}.json (graphcore/examples
  09b7c67; micro-batch 32 and 8, x 4 replicas x 510 = the table's batches, 65,280 and 16,320).
Packed rows: the published figure counts the sequences in each pack (nlp/bert/popart/utils/iteration.py at c0239af:
the largest sequence index of each pack's input_mask). At SL512 a pack holds 1.996 sequences on average: Graphcore's
packing of its Wikipedia SL512 data at 3 sequences a pack at most (the configs' max_sequences_per_pack) gives a
1.99625x "speed-up over un-packed dataset", which is sequences over packs (graphcore/examples
tutorials/blogs_code/packedBERT/README.md at 3cc8f81, NNLSHP; Krell et al. 2021, arXiv 2107.02027: 2x). At SL128 a
pack holds 1.17: Graphcore's PyTorch BERT sizes its packed steps by the same data's packing_factor {128: 1.17,
384: 1.7, 512: 2.0} (nlp/bert/pytorch/configs_pretraining.yml at c0239af; args.py divides the gradient accumulation
by it, so that a packed step trains as many sequences). The global batch is not a packing figure: packed SL384 and
SL512 both use 9,600 packs. A pack's MLM head runs on mask_tokens + max_sequences_per_pack - 1 positions (22 at
SL128, 78 at SL512: bert_model.py at c0239af, BertConfig.max_lm_predictions).
"fits" is the planner's memory verdict on the published config (tile_memory.py: the fullest tile decides).
The TFLOPS column is what the published figure means per IPU: the model's FLOPs (recomputation included) an IPU
does a second at the published throughput. It compares published rows with each other, whatever the planner says:
BERT-Large SL384 (pre-SDK 2.5) runs about 12% fewer FLOPs a second than SL128 (the same edition) and SL512 packed
(SDK 3.1) on either Pod, though its config differs from theirs only in sequence length, masked tokens and
micro-batch (docs/planner-fidelity.md says what was checked). SL512 packed, counted at 1.996 sequences a pack, runs
about as few as SL384. Part of that is the attention scores' vector work (heads x s^2 a sample and layer), which
the planner prices at poplibs' cycle tables (assumptions.py score_forward_cycles); a table gives its share of
each transformer row's compute and the row's error with and without it. A table (planner_checks.py) sizes what
the BERT configs do beside what the planner prices (the state's streaming, IPU 0's load, gradient accumulation,
a packed layer's attention mask) against the time a step each row misses. Two tables (planner_shapes.py) follow:
three compute rates that depend on the micro-batch, each fitted to SL384 on a Pod16, and what each does to the
other rows; and the multiple of poplibs' cycles a score each held-out row would need (the fit re-solved), which
shows that no one cost a score serves both BERT-Large with micro-batch 2 and BERT-Base SL512. A last table
(planner_matmuls.py) estimates each encoder layer's matmuls with a poplin-style plan (vipu/jobs/matmul_plan.py:
the split over the tiles, AMP vertex cycles, exchange and partials, after graphcore/poplibs lib/poplin) and gives
each row's error if attention's batched matmuls ran slower by the estimate's ratio, or every matmul at its estimate.
Four checks on the two SL512 packed rows follow (planner_sl512.py): SL512 packed over SL128 packed as published by
PopART and by PyTorch (the same layout, counted the same way; with PyTorch's matmul_proportion, equal at SL128
and SL512 on a Pod64) and as planned; each BERT-Large pre-training config's
step split into a fixed part and its micro-batches' ticks from its Pod16 and Pod64 figures; the encoder layer's
matmuls planned with each tile's piece held under the config's available_memory_proportion; and the same model and
data on a Bow Pod16 in Graphcore's MLPerf v2.0 layout, published and planned, beside the row. A last table
(planner_attention.py) tests issue 25's hypothesis for those rows, attention's s^2 part dearer than planned by its
shape: on pairs of rows from one framework and edition that differ in sequence length, the multiple of the part's
planned cost that plans each pair's ratio as published.
Everything here is a prediction from formulas: no wall-clock time is measured.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.calibration import (BERT_FIT_SEQUENCES_PER_S, BERT_FIT_SPECS, IMAGENET_TRAIN_IMAGES, POD128_RUN,
                                   PODS, RUNS, bert_spec, plan_of, resnet50_spec, solve)
from vipu.jobs.command import plan_file
from planner_attention import attention_by_shape
from planner_checks import config_checks
from planner_matmuls import matmul_plans
from planner_shapes import micro_batch_shapes, score_needs
from planner_sl512 import sl512_checks

TABLE = "graphcore.ai/performance-results"
LARGE_128 = "nlp/bert/popart/configs/pretrain_large_128.json"
# Graphcore's packing of its Wikipedia SL512 data, at most 3 sequences a pack: sequences over packs
# (graphcore/examples tutorials/blogs_code/packedBERT/README.md, "Achieved speed-up over un-packed dataset"); its
# MLPerf BERT configs take 2 (mlcommons/training_results_v2.0 Graphcore/benchmarks/bert/implementations/popart/
# configs/pod64-closed.json, avg_seq_per_pack)
SL512_SEQUENCES_PER_PACK = 1.99625
# Graphcore's packing factor of its SL128 Wikipedia data, at most 3 sequences a pack (graphcore/examples
# nlp/bert/pytorch/configs_pretraining.yml at c0239af, packing_factor; its SL512 figure, 2.0, agrees with the above)
SL128_SEQUENCES_PER_PACK = 1.17
# PopART BERT's MLM positions in a pack: mask_tokens + max_sequences_per_pack - 1 (bert_model.py at c0239af,
# BertConfig.max_lm_predictions); the packed configs' max_sequences_per_pack is 3
PACK_EXTRA_MASKED = 3 - 1


@dataclass(frozen=True)
class Point:
    model: str
    source: str  # where the published figure is, and the config
    spec: dict
    published: float  # items (images, sequences) a second
    fitted: bool = False

    @property
    def ipus(self) -> int:
        return self.spec["ipus"]


def bert_large(ipus: int, seq_len: int, mask: int, micro_batch: int, global_batch: int, packs: float = 1.0) -> dict:
    return bert_spec(ipus, 24, 1024, 16, seq_len, mask, micro_batch, global_batch, [3, 7, 7, 7], packs)


def bert_base(ipus: int, seq_len: int, mask: int, micro_batch: int, global_batch: int) -> dict:
    # encoder_start_ipu 1: the first IPU holds the embedding and its tied head only
    return bert_spec(ipus, 12, 768, 12, seq_len, mask, micro_batch, global_batch, [0, 4, 4, 4])


def bert_base_tf2(seq_len: int, mask: int, micro_batch: int, global_batch: int) -> dict:
    """Graphcore's TensorFlow 2 BERT-Base pre-training on a Pod16 (nlp/bert/tensorflow2/configs/
    pretrain_base_128_phase1.json and pretrain_base_384_phase2.json): the embedding and the heads on IPU 0, 4 layers
    on each other IPU, 4 replicas, 510 micro-batches a step; the app's defaults: recomputation,
    optimiser state off chip (nlp/bert/tensorflow2/utilities/options.py); the configs: no RTS."""
    spec = bert_base(16, seq_len, mask, micro_batch, global_batch)
    spec["workload"]["layout"]["rts"] = False
    return spec


def vit_base(ipus: int) -> dict:
    """ViT-B/16 at 224 x 224: 196 patches and the class token, planned as a transformer without a vocabulary fed
    from the hosts (its input, 197 x 768 fp16 values, is about an fp16 image's bytes; the patch projection, 0.7% of
    the FLOPs, is left out)."""
    r = ipus // 4
    return {"ipus": ipus, "pod": PODS[ipus], "workload": {
        "kind": "train", "optimizer": "adam", "master_weights": False, "synthetic_data": False,
        "model": {"kind": "transformer", "layers": 12, "hidden": 768, "heads": 12, "seq_len": 197},
        "layout": {"p": 4, "r": r, "micro_batch": 8, "micro_batches": 65_536 // (8 * r), "recompute": True,
                   "rts": True, "gradient_reduction": "per_tensor", "layers_per_stage": [3, 3, 3, 3]}}}


def squad_large() -> dict:
    """Graphcore's PopART BERT-Large SQuAD fine-tuning (squad_large_384.json) on a Pod16: 8 stages (layers_per_ipu
    [2, 3, 3, 3, 3, 3, 3, 4], the embedding on the first), 2 replicas, micro-batch 4, global batch 256, 4 device
    iterations, Adam with its state on chip, sharded (RTS; the config keeps it in fp16, which only memory would
    see), recomputation (PopART's default when pipelining). Its span head (2 logits a token) is planned as a
    vocabulary head on one position (mask_tokens 1: 0.03% of the FLOPs): the spec has no head-less vocabulary model."""
    return {"ipus": 16, "pod": PODS[16], "workload": {
        "kind": "train", "optimizer": "adam", "master_weights": False,
        "model": {"kind": "transformer", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 384, "vocab": 30400,
                  "mask_tokens": 1},
        "layout": {"p": 8, "r": 2, "micro_batch": 4, "micro_batches": 256 // (4 * 2), "device_iterations": 4,
                   "recompute": True, "rts": True, "gradient_reduction": "per_tensor",
                   "layers_per_stage": [2, 3, 3, 3, 3, 3, 3, 4]}}}


def mlperf(run, fitted: bool) -> Point:
    images_per_s = IMAGENET_TRAIN_IMAGES / (statistics.median(run.epoch_ms) / 1e3)
    return Point("ResNet-50", f"MLPerf v2.0 {run.system} ({run.replicas} x {run.micro_batch} x {run.accumulation})",
                 run.spec(), images_per_s, fitted)


POINTS = (
    *(mlperf(run, True) for run in RUNS),
    *(Point("BERT-Large SL128", f"table (PopART, SDK pre-2.5); {LARGE_128}", BERT_FIT_SPECS[n],
            BERT_FIT_SEQUENCES_PER_S[n], True) for n in (16, 64)),
    mlperf(POD128_RUN, False),
    Point("ResNet-50", f"table (TensorFlow1, batch 1,920); mk2_resnet50_mlperf_pod16_bs20", resnet50_spec(16, 20, 6),
          42_029),
    Point("ResNet-50", f"table (TensorFlow1, batch 2,560); mk2_resnet50_mlperf_pod64_bs20", resnet50_spec(64, 20, 2,
          available_memory_proportion=0.145), 145_287),
    Point("ResNet-50", f"table (TensorFlow1, batch 10,240); mk2_resnet50_mlperf_pod256_lars",
          resnet50_spec(256, 20, 2), 425_514),
    Point("BERT-Large SL384", "table (PopART, SDK pre-2.5); pretrain_large_384.json",
          bert_large(16, 384, 56, 2, 16_384), 1_470),
    Point("BERT-Large SL384", "table (PopART, SDK pre-2.5); pretrain_large_384.json",
          bert_large(64, 384, 56, 2, 16_384), 5_444),
    Point("BERT-Large SL128 packed", "table (PopART, SDK 3.1); packed/packed_pretrain_large_128.json",
          bert_large(16, 128, 20 + PACK_EXTRA_MASKED, 8, 54_784, SL128_SEQUENCES_PER_PACK), 6_044),
    Point("BERT-Large SL128 packed", "table (PopART, SDK 3.1); packed/packed_pretrain_large_128.json",
          bert_large(64, 128, 20 + PACK_EXTRA_MASKED, 8, 54_784, SL128_SEQUENCES_PER_PACK), 22_759),
    Point("BERT-Large SL512 packed", "table (PopART, SDK 3.1); packed/packed_pretrain_large_512.json",
          bert_large(16, 512, 76 + PACK_EXTRA_MASKED, 2, 9_600, SL512_SEQUENCES_PER_PACK), 2_126),
    Point("BERT-Large SL512 packed", "table (PopART, SDK 3.1); packed/packed_pretrain_large_512.json",
          bert_large(64, 512, 76 + PACK_EXTRA_MASKED, 2, 9_600, SL512_SEQUENCES_PER_PACK), 7_789),
    Point("BERT-Base SL128", "table (PopART, SDK 3.1); pretrain_base_128.json", bert_base(16, 128, 20, 32, 65_536),
          16_391),
    Point("BERT-Base SL512", "table (PopART, SDK 3.1); pretrain_base_512.json", bert_base(16, 512, 76, 8, 16_384),
          3_656),
    Point("ViT-B/16", "table (PyTorch, SDK pre-2.5, batch 65,536); b16_in1k_pretrain_lamb", vit_base(64), 31_200),
    Point("BERT-Large SQuAD SL384", "table (PopART, SDK 3.1, batch 256); squad_large_384.json", squad_large(), 1_183),
    Point("BERT-Base SL128 (TF2)", "table (TensorFlow2, SDK 3.3, batch 65,280); pretrain_base_128_phase1.json",
          bert_base_tf2(128, 20, 32, 65_280), 15_173),
    Point("BERT-Base SL384 (TF2)", "table (TensorFlow2, SDK 3.3, batch 16,320); pretrain_base_384_phase2.json",
          bert_base_tf2(384, 56, 8, 16_320), 4_387),
)


def planned(point: Point):
    """What `vipu plan SPEC` plans for the point's spec: the file read, checked and planned."""
    with tempfile.TemporaryDirectory(prefix="bench_planner-") as folder:
        path = Path(folder) / "spec.yaml"
        path.write_text(yaml.safe_dump(point.spec))
        return plan_file(path).plan


def report() -> tuple[list[float], list[float]]:
    """Print every point; return the fitted and the held-out errors."""
    header = (f"{'':<4} {'model':<24} {'system':<11} {'layout':<22} {'predicted':>10} {'published':>10} {'error':>7}"
              f" {'TFLOPS':>7} {'fits':>4}  {'step split (largest parts)'}")
    print(header)
    print("-" * 143)
    errors: dict[bool, list[float]] = {True: [], False: []}
    plans = []
    for point in POINTS:
        p = planned(point)
        plans.append((point, p))
        err = p.throughput / point.published - 1
        errors[point.fitted].append(err)
        lay = p.layout
        layout = f"p{lay.p} r{lay.r} b{lay.micro_batch} m{lay.micro_batches}"
        parts = sorted(p.time.parts(), key=lambda part: -part[1])[:3]
        split = ", ".join(f"{label} {seconds / p.step_s:.0%}" for label, seconds in parts)
        # the model FLOPs (recomputation included) an IPU does a second at the published throughput
        published_flops = p.achieved_flops_per_ipu * point.published / p.throughput
        print(f"{'fit' if point.fitted else 'held':<4} {point.model:<24} {p.pod:<11} {layout:<22}"
              f" {p.throughput:>10,.0f} {point.published:>10,.0f} {err:>+7.1%} {published_flops / 1e12:>7.1f}"
              f" {'yes' if p.fits else 'NO':>4}  {split}")
    refused = [(point, p) for point, p in plans if not p.fits]
    if refused:
        print()
        print("published configs the memory model refuses (each ran on hardware):")
    for point, p in refused:
        tiles, mem = p.memory.tiles, p.memory
        print(f"  {point.model}, {p.pod}: fullest tile {tiles.peak / 1024:,.2f} KiB of {tiles.tile_bytes / 1024:,.0f}"
              f" ({tiles.peak / tiles.tile_bytes:.0%}; matmul temporaries {tiles.temporaries / 1024:,.0f} KiB),"
              f" evenly split {mem.total / mem.sram_bytes:.0%} of SRAM")
    print()
    print("sources:")
    for i, point in enumerate(POINTS, 1):
        print(f"  {i:>2}. {point.model}, {PODS[point.ipus]}: {point.source}")
    return errors[True], errors[False]


def ablations() -> None:
    """One-option changes to a spec: how far each moves the prediction (tests/jobs/test_ablations.py pins them)."""
    print("one-option changes (predicted step time, relative to the config):")
    cases = (
        ("ResNet-50 Pod256, batch_norm_replicas 1", resnet50_spec(256, 20, 2),
         resnet50_spec(256, 20, 2, batch_norm_replicas=1)),
        ("ResNet-50 Pod16, micro-batch 10 x 12 (same batch)", resnet50_spec(16, 20, 6), resnet50_spec(16, 10, 12)),
        ("BERT-Large SL128 Pod16, no recomputation", BERT_FIT_SPECS[16],
         _with_layout(BERT_FIT_SPECS[16], recompute=False)),
        ("ResNet-50 Pod256, 10 device iterations a host call", resnet50_spec(256, 20, 2),
         _with_layout(resnet50_spec(256, 20, 2), device_iterations=10)),
    )
    for label, base, changed in cases:
        before, after = plan_of(base, DEFAULT).step_s, plan_of(changed, DEFAULT).step_s
        print(f"  {label:<52} {before * 1e3:>10,.1f} ms -> {after * 1e3:>10,.1f} ms ({after / before - 1:+.1%})")


NO_SCORES = {"score_forward_cycles": 0.0, "score_backward_cycles": 0.0}


def score_work() -> None:
    """The attention scores' vector work (assumptions.score_forward_cycles, score_backward_cycles: poplibs' cycle
    tables): its share of each transformer row's compute, and each row's error with it and without it (the
    constants re-solved without it, as before it was priced)."""
    without = DEFAULT.model_copy(update={**NO_SCORES, **solve(fixed=NO_SCORES)})
    print("attention scores on the vector units (poplibs' cycles), and the planner without them (constants re-solved):")
    print(f"  {'model':<24} {'system':<11} {'share of compute':>16} {'error':>7} {'without':>8}")
    for point in POINTS:
        if point.spec["workload"]["model"]["kind"] != "transformer":
            continue
        with_scores = plan_of(point.spec, DEFAULT)
        matmuls_only = plan_of(point.spec, DEFAULT.model_copy(update=NO_SCORES))
        share = 1 - matmuls_only.time.compute_s / with_scores.time.compute_s
        errors = [plan_of(point.spec, a).throughput / point.published - 1 for a in (DEFAULT, without)]
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {share:>16.1%} {errors[0]:>+7.1%} {errors[1]:>+8.1%}")
    print(f"  without: matmul efficiency {without.compute_efficiency:.4f} (with: {DEFAULT.compute_efficiency:.4f})")


def _with_layout(spec: dict, **changes) -> dict:
    workload = spec["workload"]
    return {**spec, "workload": {**workload, "layout": {**workload["layout"], **changes}}}


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print()
    fitted = solve()
    print("fitted constants (vipu/jobs/calibration.py), solved in this run and as assumptions.py rounds them:")
    for name, value in fitted.items():
        print(f"  {name:<32} solved {value:.4f}   default {getattr(DEFAULT, name):.4f}")
    print()
    fit_errors, held_errors = report()
    print()
    ablations()
    print()
    config_checks(POINTS, planned)
    print()
    score_work()
    print()
    micro_batch_shapes(POINTS, planned)
    print()
    score_needs(POINTS)
    print()
    matmul_plans(POINTS, planned)
    print()
    sl512_checks(POINTS, planned)
    print()
    attention_by_shape(POINTS)
    print()
    print("assumptions (vipu plan prints these with every plan):")
    for line in DEFAULT.lines():
        print(f"  - {line}")
    print()
    absolute = [abs(e) for e in held_errors]
    median, worst = statistics.median(absolute), max(absolute)
    print(f"fitted points: {len(fit_errors)}, largest error {max(abs(e) for e in fit_errors):.1%} (the defaults are"
          " the solved constants rounded)")
    print(f"held-out points: {len(held_errors)}, median absolute error {median:.1%}, largest {worst:.1%}")
    met = median <= 0.05 and worst <= 0.10
    print(f"goal: held-out median <= 5% and none over 10% -> {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
