"""The tiny example specs run to completion in seconds, train, equal single-device training, and their emulated
step time lands near the planner's prediction (the analytic model and the emulation share link figures and the
compute efficiency; they differ in what the execution really does: BSP syncs, routes, uneven stages)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vipu.jobs.spec import load_plan_spec
from vipu.jobs.train import run_training
from tests.jobs.train.builders import ATOL, RTOL, reference

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.mark.parametrize("name, moving", [("tiny_dp", "data_parallel"), ("tiny_pp", "pipeline"),
                                          ("tiny_tp", "tensor_parallel")])
def test_tiny_example_runs_trains_and_matches(name, moving):
    spec, pod = load_plan_spec(EXAMPLES / f"{name}.yaml")
    result = run_training(spec.workload, pod)
    assert result.steps_run == spec.workload.steps and not result.stopped
    assert result.wall_s < 20
    assert result.losses[-1] < 0.8 * result.losses[0]
    np.testing.assert_allclose(result.losses, reference(spec.workload)[0], rtol=RTOL, atol=ATOL)
    assert all(r.bytes_per_kind[moving] > 0 for r in result.reports)
    assert 0.5 < result.emulated_step_s / result.predicted_step_s < 2
