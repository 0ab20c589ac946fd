"""The calibrated constants: the solve reproduces the three MLPerf runs, and the defaults are its values."""

from __future__ import annotations

import pytest

from vipu.jobs import Assumptions
from vipu.jobs.calibration import RUNS, predicted_step_s, resnet50_assumptions, solve


def test_run_throughput_is_images_over_the_median_epoch():
    pod64 = RUNS[1]
    # ImageNet's 1,281,167 images in the median of the log's 40 epoch times (8,760 ms; the mean, 8,914, has the
    # checkpoint epochs and the last one in it)
    assert len(pod64.epoch_ms) == 40 and sorted(pod64.epoch_ms)[19:21] == [8742, 8778]
    assert pod64.images_per_s == pytest.approx(1_281_167 / 8.760)
    assert pod64.step_s == pytest.approx(64 * 20 * 4 / pod64.images_per_s)


def test_the_solve_is_exact_as_the_step_time_is_linear_in_the_constants():
    fitted = solve()
    for run in RUNS:
        assert predicted_step_s(run, resnet50_assumptions(**fitted)) == pytest.approx(run.step_s, rel=1e-9)


def test_defaults_are_the_solved_constants_rounded():
    fitted, default = solve(), Assumptions()
    assert default.compute_efficiency == pytest.approx(fitted["compute_efficiency"], abs=0.0005)
    assert default.sync_per_machine_s == pytest.approx(fitted["sync_per_machine_s"], abs=0.005e-6)
    assert default.gateway_sync_s == pytest.approx(fitted["gateway_sync_s"], abs=0.05e-6)
    for run in RUNS:  # so the defaults reproduce the runs within 1%
        assert predicted_step_s(run, resnet50_assumptions()) == pytest.approx(run.step_s, rel=0.01)
