"""Attention's batched matmuls under a poplin-style plan estimate (vipu/jobs/matmul_plan.py): whether splitting
few attention groups over the tiles explains the rows BERT-Large with micro-batch 2 misses. bench/bench_planner.py
prints the table; docs/planner-fidelity.md says what it shows.
"""

from __future__ import annotations

import statistics

from vipu.jobs.calibration import BERT_FIT_SPECS, PODS
from vipu.jobs.matmul_plan import layer_efficiency, plan_matmul
from planner_shapes import StepLine, other_held_errors

TILES = 1472  # a Bow IPU's tiles; no BERT or ViT config sets I/O tiles


def _layer(spec: dict) -> dict[str, float]:
    model, layout = spec["workload"]["model"], spec["workload"]["layout"]
    return layer_efficiency(layout["micro_batch"], model["seq_len"], model["hidden"], model["heads"], TILES)


def _time_per_mac(layer: dict[str, float], rule: str) -> float:
    """A layer's matmul time a MAC, relative: "attention" runs the dense matmuls at the fitted rate and attention
    slower by the estimate's ratio; "every" runs each class at its own estimated efficiency."""
    share = layer["attention_share"]
    if rule == "attention":
        return 1 + share * (layer["dense"] / layer["attention"] - 1)
    return (1 - share) / layer["dense"] + share / layer["attention"]


RULES = ("attention", "every")


def matmul_plans(points, planned) -> None:
    """Each transformer row's layer under the estimate: groups, the dense and attention matmuls' estimated
    efficiency, attention's share of the MACs, and the row's error under each rule, the matmul efficiency rescaled
    so that the BERT-Large SL128 fit rows keep their fitted time (their factor is 1)."""
    reference = _layer(BERT_FIT_SPECS[16])
    rows = [point for point in points if point.spec["workload"]["model"]["kind"] == "transformer"]
    print("poplin-style matmul plans (vipu/jobs/matmul_plan.py), per encoder layer in training; the row's error if"
          " attention ran slower by the estimate's ratio to the dense matmuls (attention), or every matmul at its"
          " estimate (every):")
    print(f"  {'model':<24} {'system':<11} {'groups':>6} {'Q K^T split':>16} {'tiles':>5} {'dense':>6}"
          f" {'attention':>9} {'share':>6} {'error':>7}" + "".join(f" {rule:>9}" for rule in RULES))
    held = {rule: [] for rule in RULES}
    for point in rows:
        layer = _layer(point.spec)
        line = StepLine(point)
        errors = [line.planned_error(_time_per_mac(reference, rule) / _time_per_mac(layer, rule)) for rule in RULES]
        workload = point.spec["workload"]
        model = workload["model"]
        groups = workload["layout"]["micro_batch"] * model["heads"]
        scores = plan_matmul(groups, model["seq_len"], model["hidden"] // model["heads"], model["seq_len"], TILES)
        split = " ".join(str(n) for n in scores.splits)
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {groups:>6} {split:>16} {scores.tiles_used:>5}"
              f" {layer['dense']:>6.3f}"
              f" {layer['attention']:>9.3f} {layer['attention_share']:>6.1%} {line.error(1.0):>+7.1%}"
              + "".join(f" {err:>+9.1%}" for err in errors))
        if not point.fitted:
            for rule, err in zip(RULES, errors):
                held[rule].append(abs(err))
    others = [abs(err) for err in other_held_errors(points, rows, planned)]
    for rule, errors in held.items():
        absolute = errors + others
        print(f"  {rule}: held-out points {len(absolute)}, median {statistics.median(absolute):.1%},"
              f" largest {max(absolute):.1%}")
