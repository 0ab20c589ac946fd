"""Per-IPU usage over a run (utilisation and peak memory, kept with the job's result) and how the summary reads."""

from __future__ import annotations

import pytest

from tests.jobs.train.builders import mlp, pod, run, workload
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.memory_estimate import memory
from vipu.jobs.train.results import IpuUsage, size, usage_lines


@pytest.mark.parametrize("layout, ipus", [(dict(r=4), 4), (dict(t=2, p=2, r=2, micro_batches=2), 8)])
def test_usage_covers_every_ipu_of_the_partition_over_the_whole_run(layout, ipus):
    result = run(workload(mlp(), "adam", steps=3, **layout))
    usage = result.ipu_usage
    assert [u.ipu for u in usage] == list(range(ipus))
    assert [u.machine for u in usage] == [ipu // 4 for ipu in range(ipus)]  # a Bow-2000 has 4 IPUs
    total_s = sum(r.emulated_step_s for r in result.reports)
    for u in usage:
        steps = [r.ipus[u.ipu] for r in result.reports]
        assert u.utilisation == pytest.approx(sum(s.compute_s for s in steps) / total_s)
        assert 0 < u.utilisation <= 1
        assert u.sram_peak_bytes == max(s.memory_bytes for s in steps) > u.activation_peak_bytes > 0
        assert u.streaming_peak_bytes == 0  # the emulator keeps everything in SRAM


def test_usage_table_is_one_line_per_ipu_and_shows_streaming_only_when_used():
    sram = [IpuUsage(ipu=i, machine=0, utilisation=0.5, sram_peak_bytes=3 << 20, activation_peak_bytes=2048)
            for i in range(2)]
    lines = usage_lines(sram)
    assert lines[0].split() == ["IPU", "MACHINE", "UTIL", "SRAM", "PEAK", "ACTIVATIONS"]
    assert lines[1].split() == ["0", "0", "50.00%", "3.0", "MiB", "2.0", "KiB"] and len(lines) == 3
    streamed = [sram[0].model_copy(update={"streaming_peak_bytes": 5 << 30})]
    assert usage_lines(streamed)[0].split()[-1] == "STREAMING" and usage_lines(streamed)[1].endswith("5.0 GiB")
    assert usage_lines([]) == []
    assert (size(812), size(41.3 * 1024)) == ("812 B", "41.3 KiB")


@pytest.mark.parametrize("dtype, master, per_param", [("fp32", True, 4 + 4 + 8), ("fp16", True, 2 + 2 + 12),
                                                      ("fp16", False, 2 + 2 + 8)])
def test_memory_per_ipu_is_what_the_pod_holds_as_the_planner_prices_it(dtype, master, per_param):
    """Weights and gradients in the model's dtype, Adam's two fp32 moments, an fp16 model's fp32 master weights
    when it keeps them; activations in the model's dtype. The arithmetic is fp32 whatever the dtype.
    Regression: fp16 jobs reported fp32 buffers and no master weights, half of what the plan said."""
    w = workload(mlp(dtype=dtype), "adam", steps=1, r=2).model_copy(update={"master_weights": master})
    ipu = run(w).reports[0].ipus[0]
    params = w.model.params()  # t = p = 1: every IPU holds the whole model
    planned = memory(w, pod(), DEFAULT)
    assert ipu.memory_bytes - ipu.activation_bytes == params * per_param
    assert params * per_param == planned.weights + planned.gradients + planned.optimizer
    fp32 = run(workload(mlp(), "adam", steps=1, r=2)).reports[0].ipus[0]
    assert ipu.activation_bytes == fp32.activation_bytes * w.model.value_bytes // 4
