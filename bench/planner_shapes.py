"""Shapes tried for the gap on BERT-Large SL384 pre-training: compute rates that depend on the micro-batch, each
fitted to one published row and checked on the others. bench/bench_planner.py prints them after its table;
docs/planner-fidelity.md says what they show (no shape fits SL384 without breaking other rows, so the planner
keeps one matmul efficiency).
"""

from __future__ import annotations

import statistics

from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.calibration import PODS, plan_of, solve


def micro_batch_shapes(points, planned) -> None:
    """Shapes tried for BERT-Large SL384's gap, each a compute rate that depends on the micro-batch: its one figure
    solved so that SL384 on a Pod16 plans at its published figure (which then becomes a fit point), then every
    transformer row planned at the rate the shape gives it. The SL128 fit rows keep the fitted rate, so no other
    constant moves. A row's rate: the fitted matmul efficiency x the shape's factor.
    - tokens: rows of a micro-batch's matmuls (micro-batch x sequence length), the rate growing as
      tokens / (tokens + k): poplibs' estimate of an AMP vertex, a fixed cost per worker pass and 4 cycles a row
      (graphcore/poplibs lib/poplin/PerformanceEstimation.hpp, getConvPartial1x1SupervisorInnerLoopCycleEstimate),
      with the rows split over the tiles alike whatever their number (an assumption);
    - matmul work: the same in tokens x hidden^2 (a micro-batch's matmul work a layer, so per tile);
    - cost per tick: a fixed time per pipeline tick (each micro-batch on each stage), the matmul efficiency rescaled
      so SL128's tick stays as fitted.
    "needs" is the factor that plans the row at its published figure, everything else as planned."""
    rows = [point for point in points if point.spec["workload"]["model"]["kind"] == "transformer"]
    lines = {id(point): StepLine(point) for point in rows}
    fit = next(point for point in rows if point.model == "BERT-Large SL384" and point.ipus == 16)
    reference = next(point for point in rows if point.model == "BERT-Large SL128")
    tick = {id(point): lines[id(point)].tick_s for point in rows}

    def saturating(size):
        return lambda k: (lambda point: size(point) / (size(point) + k) * (size(reference) + k) / size(reference))

    def per_tick(c):
        return lambda point: 1 / (1 - c / tick[id(reference)] + c / tick[id(point)])

    shapes = (("tokens", saturating(_tokens), 1.0, 1e7, lambda k: f"k = {k:,.0f} tokens"),
              ("matmul work", saturating(lambda point: _tokens(point) * _hidden(point) ** 2), 1e3, 1e15,
               lambda k: f"k = {k:.3g} tokens x hidden^2"),
              ("cost per tick", per_tick, 0.0, 0.999 * tick[id(reference)],
               lambda c: f"{c * 1e3:.2f} ms a tick, matmul efficiency"
                         f" {DEFAULT.compute_efficiency / (1 - c / tick[id(reference)]):.3f}"))
    solved = []
    for name, make, lo, hi, text in shapes:
        value = _bisect(lambda v: lines[id(fit)].error(make(v)(fit)), lo, hi)
        solved.append((name, make(value), text(value)))
    print("micro-batch shapes tried for BERT-Large SL384 (each fitted to SL384 on a Pod16):")
    for name, _, text in solved:
        print(f"  {name}: {text}")
    print(f"  {'model':<24} {'system':<11} {'tokens':>6} {'tick ms':>7} {'needs':>6}"
          + "".join(f" {name + ': factor, error':>28}" for name, _, _ in solved))
    held = {name: [] for name, _, _ in solved}
    for point in rows:
        line = lines[id(point)]
        cells = ""
        for name, factor, _ in solved:
            err = line.planned_error(factor(point))
            cells += f" {factor(point):>19.3f} {err:>+8.1%}"
            if not point.fitted and point is not fit:
                held[name].append(abs(err))
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {_tokens(point):>6,} {line.tick_s * 1e3:>7.2f}"
              f" {line.needs():>6.3f}{cells}")
    others = [abs(point_error) for point_error in other_held_errors(points, rows, planned)]
    for name, errors in held.items():
        absolute = errors + others
        print(f"  {name}: held-out points {len(absolute)}, median {statistics.median(absolute):.1%},"
              f" largest {max(absolute):.1%}")


class StepLine:
    """A row's predicted step time as a line in 1 / (the factor on its matmul efficiency): its compute (in the
    ticks and the bubble) scales with it, the rest does not. tick_s is the busiest stage's compute a tick."""

    def __init__(self, point):
        self.point = point
        one, half = (plan_of(point.spec, _scaled(f)) for f in (1.0, 0.5))
        self.fixed_s, self.scaled_s = 2 * one.step_s - half.step_s, half.step_s - one.step_s
        self.tick_s = one.time.compute_s / one.layout.micro_batches
        self.published_step_s = one.step_s * one.throughput / point.published

    def error(self, factor: float) -> float:
        return self.published_step_s / (self.fixed_s + self.scaled_s / factor) - 1

    def needs(self) -> float:
        return self.scaled_s / (self.published_step_s - self.fixed_s)

    def planned_error(self, factor: float) -> float:
        return plan_of(self.point.spec, _scaled(factor)).throughput / self.point.published - 1


def _scaled(factor: float):
    return DEFAULT.model_copy(update={"compute_efficiency": DEFAULT.compute_efficiency * factor})


def _tokens(point) -> int:
    workload = point.spec["workload"]
    return workload["layout"]["micro_batch"] * workload["model"]["seq_len"]


def _hidden(point) -> int:
    return point.spec["workload"]["model"]["hidden"]


def other_held_errors(points, transformers: list, planned) -> list[float]:
    """The held-out rows the shapes leave alone (ResNet-50: convolutions)."""
    return [planned(point).throughput / point.published - 1 for point in points
            if not point.fitted and point not in transformers]


def _bisect(f, lo: float, hi: float) -> float:
    """Where the monotone f crosses 0 between lo and hi."""
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if f(lo) * f(mid) <= 0 else (mid, hi)
    return (lo + hi) / 2



def score_needs(points, grid=(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0)) -> None:
    """What each held-out transformer row asks of the attention scores' vector work: the multiple of poplibs'
    cycles a score (assumptions.score_forward_cycles and score_backward_cycles; 1 is the planner's) that plans the
    row at its published figure, the fit re-solved at each multiple as the bench solves it (the SL128 fit rows
    absorb their own scores' share). A diagnostic only: the planner keeps poplibs' figures. Solved on a grid of
    multiples, linear between the two that bracket the row; "-" where the row hardly moves (it has as many scores
    per FLOP as the fit rows). Also printed: the row's attention groups (micro-batch x heads: the batched matmuls
    Q K^T and the weighted sum of V come in that many)."""
    rows = [point for point in points
            if point.spec["workload"]["model"]["kind"] == "transformer" and not point.fitted]
    errors: dict[int, list[float]] = {id(point): [] for point in rows}
    for multiple in grid:
        cycles = {"score_forward_cycles": DEFAULT.score_forward_cycles * multiple,
                  "score_backward_cycles": DEFAULT.score_backward_cycles * multiple}
        assumptions = DEFAULT.model_copy(update={**cycles, **solve(fixed=cycles)})
        for point in rows:
            errors[id(point)].append(plan_of(point.spec, assumptions).throughput / point.published - 1)
    shown = [grid.index(m) for m in (0.0, 1.0, 2.0, 4.0)]
    print("attention scores' vector work each held-out row asks for (the fit re-solved at each multiple of"
          " poplibs' cycles a score):")
    print(f"  {'model':<24} {'system':<11} {'groups':>6}" + "".join(f" {f'x{grid[i]:g}':>7}" for i in shown)
          + f" {'needs':>6}")
    for point in rows:
        row = errors[id(point)]
        workload = point.spec["workload"]
        groups = workload["layout"]["micro_batch"] * workload["model"]["heads"]
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {groups:>6}" + "".join(f" {row[i]:>+7.1%}" for i in shown)
              + f" {crossing(grid, row):>6}")


def crossing(grid, errors) -> str:
    """The multiple where the errors (falling as it grows) cross 0, linear between grid points."""
    if abs(errors[-1] - errors[0]) < 0.005:
        return "-"
    for (x0, e0), (x1, e1) in zip(zip(grid, errors), zip(grid[1:], errors[1:])):
        if e0 >= 0 >= e1:
            return f"x{x0 + (x1 - x0) * e0 / (e0 - e1):.1f}"
    return f">x{grid[-1]:g}" if errors[-1] > 0 else f"<x{grid[0]:g}"
