"""The fitted constants: the solve reproduces the five published points, and the defaults are its values."""

from __future__ import annotations

import pytest

from vipu.jobs import Assumptions
from vipu.jobs.calibration import FITTED, POD128_RUN, RUNS, fit_points, plan_of, predicted_step_s, solve


def test_run_throughput_is_images_over_the_median_epoch():
    pod64 = RUNS[1]
    # ImageNet's 1,281,167 images in the median of the log's 40 epoch times (8,760 ms; the mean, 8,914, has the
    # checkpoint epochs and the last one in it)
    assert len(pod64.epoch_ms) == 40 and sorted(pod64.epoch_ms)[19:21] == [8742, 8778]
    assert pod64.images_per_s == pytest.approx(1_281_167 / 8.760)
    assert pod64.step_s == pytest.approx(64 * 20 * 4 / pod64.images_per_s)
    assert POD128_RUN.step_s == pytest.approx(128 * 20 * 2 / (1_281_167 / 5.559))  # held out: 41 epochs, median


def test_the_solve_is_exact_as_the_step_time_is_linear_in_the_constants():
    fitted = solve()
    assert set(fitted) == set(FITTED)
    for spec, step_s in fit_points():
        assert plan_of(spec, Assumptions(**fitted)).step_s == pytest.approx(step_s, rel=1e-9)


def test_defaults_are_the_solved_constants_rounded():
    fitted, default = solve(), Assumptions()
    for name in FITTED:
        assert getattr(default, name) == pytest.approx(fitted[name], rel=0.001), name
    for run in RUNS:  # so the defaults reproduce the runs within 0.5%
        assert predicted_step_s(run, default) == pytest.approx(run.step_s, rel=0.005)
