"""GPipe and 1F1B: every stage runs each micro-batch forward then backward, in an order that respects the
dependencies, with at most p - s micro-batches in flight under 1F1B; with equal durations the pipeline's idle
share is exactly (p-1)/(m+p-1)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vipu.jobs.layout import bubble_fraction
from vipu.jobs.train.pipeline_schedule import timeline
from vipu.sdk.nn.pipeline import execution_order, stage_orders

SHAPES = [(1, 1), (1, 4), (2, 1), (2, 2), (4, 3), (4, 8), (8, 5)]


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("p, m", SHAPES)
def test_every_op_once_in_dependency_order(schedule, p, m):
    order = execution_order(stage_orders(schedule, p, m))
    assert sorted(order) == sorted((s, kind, j) for s in range(p) for kind in "FB" for j in range(m))
    position = {op: i for i, op in enumerate(order)}
    for s, kind, j in order:
        if kind == "F" and s > 0:
            assert position[(s - 1, "F", j)] < position[(s, "F", j)]
        if kind == "B":
            assert position[(s, "F", j)] < position[(s, "B", j)]
            if s < p - 1:
                assert position[(s + 1, "B", j)] < position[(s, "B", j)]


@pytest.mark.parametrize("p, m", SHAPES)
def test_in_flight_micro_batches(p, m):
    for schedule, limit in (("1f1b", lambda s: min(p - s, m)), ("gpipe", lambda s: m)):
        for s, ops in enumerate(stage_orders(schedule, p, m)):
            held = peak = 0
            for kind, _ in ops:
                held += 1 if kind == "F" else -1
                peak = max(peak, held)
            assert peak == limit(s), (schedule, s)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("p, m", SHAPES)
def test_balanced_stages_idle_exactly_the_bubble(schedule, p, m):
    order = execution_order(stage_orders(schedule, p, m))
    # backward twice as long as forward, the same on every stage
    line = timeline(order, {op: 2.0 if op[1] == "B" else 1.0 for op in order}, p)
    assert line.pipeline_s == 3 * (m + p - 1)
    assert Fraction(line.bubble_fraction).limit_denominator(1000) == bubble_fraction(p, m)
