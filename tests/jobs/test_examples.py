"""The example specs in examples/ load, plan and fit, and are job specs the scheduler can take."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from vipu.errors import InvalidArgument
from vipu.jobs import check_fits, load_plan_spec, main_plan, plan
from vipu.jobs.command import plan_file
from vipu.jobs.suggest import ORDER, suggestion_text
from vipu.scheduler.job_spec import JobSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["bert_large_pod16.yaml", "gpt3_pod256.yaml", "gpt3_pod256_modelled.yaml", "tiny_dp.yaml", "tiny_pp.yaml",
         "tiny_tp.yaml", "tiny_tp2d.yaml"]


@pytest.mark.parametrize("name", NAMES)
def test_example_loads_plans_and_fits(name):
    spec, pod = load_plan_spec(EXAMPLES / name)
    result = plan(spec.workload, pod)
    assert result.fits, result.problems()
    assert result.throughput > 0
    # only job-spec fields at the top level (the lead adds `train` to JobSpec's workload union)
    data = yaml.safe_load((EXAMPLES / name).read_text())
    assert set(data) <= set(JobSpec.model_fields)


@pytest.mark.parametrize("name, t, p, r", [
    ("tiny_dp.yaml", 1, 1, 4), ("tiny_pp.yaml", 1, 4, 1), ("tiny_tp.yaml", 4, 1, 1),
    ("bert_large_pod16.yaml", 1, 4, 4), ("gpt3_pod256.yaml", 8, 1, 4), ("gpt3_pod256_modelled.yaml", 8, 1, 4),
])
def test_example_layouts(name, t, p, r):
    spec, _ = load_plan_spec(EXAMPLES / name)
    lay = spec.workload.layout
    assert (lay.t, lay.p, lay.r) == (t, p, r)


def test_gpt3_is_the_published_layout_and_fits_a_pod256():
    """graphcore/examples nlp/gpt3_175B/popxl/config/pretraining.yml, gpt3_175B_pod256: data_parallel 4,
    tensor_parallel_1 8, tensor_parallel_2 8, micro-batch 1, global batch 128, io_tiles 128, available memory
    proportion 0.1; phased with RTS, no pipeline."""
    spec, pod = load_plan_spec(EXAMPLES / "gpt3_pod256.yaml")
    lay = spec.workload.layout
    assert (lay.t, lay.t2, lay.p, lay.r, lay.micro_batch, lay.global_batch) == (8, 8, 1, 4, 1, 128)
    assert (lay.io_tiles, lay.available_memory_proportion, lay.phased, lay.rts) == (128, 0.1, True, True)
    result = plan(spec.workload, pod)
    assert pod.name == "bow-pod256" and result.fits, result.problems()
    # phased, one attention block in SRAM (its a s^2 / t probabilities make it the largest): 4 h^2 / 64 + 3h / 8
    # (Q, K, V biases on t) + 3h / 8 (output bias and layer norm on t2) values
    h = 12288
    assert result.memory.weights == (4 * h * h // 64 + 3 * h // 8 + 3 * h // 8) * 2
    tiles = result.memory.tiles
    assert tiles.compute_tiles == 1472 - 128 and result.memory.sram_bytes == 1344 * 638976
    # the matmul temporaries are capped at a tenth of a tile
    assert tiles.temporaries <= 0.1 * 638976
    assert result.memory.streaming < result.memory.streaming_capacity
    assert result.time.tensor_parallel_s > 0 and result.time.bubble_s == 0


def test_gpt3_2d_shards_the_hidden_axis_t2_ways():
    """With t2 = 1 the same 64 IPUs per replica would be t = 64, which 96 heads do not allow; t = 8 alone holds
    eight times the weights of t 8 x t2 8."""
    spec, pod = load_plan_spec(EXAMPLES / "gpt3_pod256.yaml")
    one_axis = spec.workload.layout.model_copy(update={"t2": 1, "r": 32, "micro_batches": 4})
    one = plan(spec.workload.model_copy(update={"layout": one_axis}), pod)
    two = plan(spec.workload, pod)
    assert one.memory.streaming_weights == pytest.approx(two.memory.streaming_weights, rel=0.01)
    assert one.memory.weights > 7 * two.memory.weights


def test_main_plan_prints_the_report():
    text = main_plan(EXAMPLES / "bert_large_pod16.yaml")
    for part in ("memory per IPU", "per tile", "step time", "pipeline bubble", "data-parallel allreduce",
                 "bubble: p-1 = 3 of the pipeline's m+p-1 = 2051 ticks", "throughput", "assumptions"):
        assert part in text


def big_dp(tmp_path, hidden=8000):
    """tiny_dp.yaml with a wider model: r=4 replicas of 128M fp32 params need 1.6 GiB (1.68 GB) per IPU."""
    data = yaml.safe_load((EXAMPLES / "tiny_dp.yaml").read_text())
    data["workload"]["model"]["hidden"] = hidden
    spec = tmp_path / "big.yaml"
    spec.write_text(yaml.safe_dump(data))
    return spec


def test_main_plan_of_a_layout_that_does_not_fit_lists_layouts_that_do(tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text(yaml.safe_dump({"ipus": 16, "workload": {
        "kind": "train",
        "model": {"kind": "transformer", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 128},
        "layout": {"r": 16, "micro_batch": 8, "micro_batches": 4}}}))
    text = main_plan(spec)
    assert "DOES NOT FIT" in text
    assert "layouts of the same partition that fit: those within 5% of the best predicted throughput first, the" \
           " micro-batch nearest the spec's first among them, then by throughput:" in text


def test_the_layouts_that_fit_come_right_after_the_does_not_fit_line(tmp_path):
    """Regression: they came after the dozen lines of assumptions, and --json had none."""
    answer = plan_file(big_dp(tmp_path))
    lines = answer.text().splitlines()
    verdict = lines.index("DOES NOT FIT:")
    assert lines[verdict + 1].startswith("  needs 1.6 GiB per IPU, SRAM holds 897.0 MiB")
    assert lines[verdict + 2] == ORDER
    best = answer.suggestions
    assert lines[verdict + 3] == f"  {suggestion_text(best[0], answer.plan.layout)}"
    assert verdict + 3 < lines.index("assumptions")
    data = json.loads(answer.as_json())
    assert data["fits"] is False and data["problems"] == answer.plan.problems()
    assert [s["description"] for s in data["suggestions"]] == [c.layout.describe() for c in best]
    first = data["suggestions"][0]
    assert first["layout"]["t"] * first["layout"]["p"] * first["layout"]["r"] == 4
    assert first["throughput"] == pytest.approx(best[0].throughput) and first["memory_per_ipu_bytes"] < 0.94e9
    # the refusal is the one `vipu submit` gives for the same spec
    spec, pod = load_plan_spec(big_dp(tmp_path))
    with pytest.raises(InvalidArgument) as e:
        check_fits(spec.workload, pod, ipus=spec.ipus)
    assert answer.refusal() == e.value.message
    assert f"a layout that fits: {suggestion_text(best[0], spec.workload.layout)}" in e.value.message


def test_a_fitting_plan_has_no_refusal_and_no_suggestions():
    answer = plan_file(EXAMPLES / "tiny_dp.yaml")
    assert answer.fits and answer.refusal() is None
    assert json.loads(answer.as_json())["suggestions"] == []
    assert "DOES NOT FIT" not in answer.text()


def test_the_memory_report_shows_the_tiles():
    answer = plan_file(EXAMPLES / "gpt3_pod256.yaml", memory_report=True)
    report = answer.text().split("per-tile memory at the peak")[1]
    assert report.startswith(" (1,344 compute tiles of 624 KiB;")
    assert f"fullest {answer.plan.memory.tiles.peak / 1024:,.2f} KiB" in report  # the tile the fit is decided on
    assert "fullest tiles" in report and "tile     0:" in report and "matmul temporaries" in report
    assert json.loads(answer.as_json())["memory_report"][0].startswith("per-tile memory at the peak")
    assert "per-tile memory" not in plan_file(EXAMPLES / "gpt3_pod256.yaml").text()


def test_a_plan_no_layout_can_fit_says_so_under_the_verdict(tmp_path):
    answer = plan_file(big_dp(tmp_path, hidden=30000))  # 1.8G params: 7.2 GB of fp32 weights alone
    lines = answer.text().splitlines()
    verdict = lines.index("DOES NOT FIT:")
    assert lines[verdict + 2] == ("no layout of 4 IPUs with global batch 64 fits; ask for more IPUs or use a"
                                  " smaller model")
    assert json.loads(answer.as_json())["suggestions"] == []
    assert answer.refusal().endswith(lines[verdict + 2])


def test_main_plan_takes_the_pod_of_the_caller():
    text = main_plan(EXAMPLES / "tiny_dp.yaml", pod="bow-pod64")
    assert "on 4 IPUs of bow-pod64" in text


def test_plan_dumps_to_json_with_its_verdict():
    spec, pod = load_plan_spec(EXAMPLES / "tiny_pp.yaml")
    data = json.loads(plan(spec.workload, pod).model_dump_json())
    assert data["fits"] is True and data["memory"]["fits_sram"] is True
    assert data["time"]["bubble_fraction"] == pytest.approx(3 / 11)
    assert data["step_s"] == pytest.approx(data["time"]["total_s"])
