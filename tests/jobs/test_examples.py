"""The example specs in examples/ load, plan and fit, and are job specs the scheduler can take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vipu.errors import InvalidArgument
from vipu.jobs import check_fits, load_plan_spec, main_plan, plan
from vipu.jobs.command import plan_file
from vipu.jobs.suggest import suggestion_text
from vipu.scheduler.spec import JobSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["bert_large_pod16.yaml", "gpt3_pod256.yaml", "tiny_dp.yaml", "tiny_pp.yaml", "tiny_tp.yaml"]


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
    ("bert_large_pod16.yaml", 1, 4, 4), ("gpt3_pod256.yaml", 8, 8, 4),
])
def test_example_layouts(name, t, p, r):
    spec, _ = load_plan_spec(EXAMPLES / name)
    lay = spec.workload.layout
    assert (lay.t, lay.p, lay.r) == (t, p, r)


def test_gpt3_plan_reports_memory_and_time():
    # 174.6G params (96 x 1.812G + 0.64G embeddings); per IPU 1/64: 2.73G params. Phased: in SRAM one
    # feed-forward block split 8 ways, 2 x 4 x 12,288^2 / 8 = 151M params -> 302 MB of weights, 302 MB of
    # gradients; the rest in Streaming Memory, within a Bow-2000's 256 GB / 4 IPUs
    spec, pod = load_plan_spec(EXAMPLES / "gpt3_pod256.yaml")
    result = plan(spec.workload, pod)
    assert result.params == pytest.approx(174.6e9, rel=1e-3)
    assert result.memory.weights == pytest.approx((8 * 12288**2 + 4 * 12288 + 3 * 12288) / 8 * 2)
    assert 0 < result.memory.streaming <= result.memory.streaming_capacity
    # RTS stores each IPU's 1/4 of its 2.73G params' weights and gradient accumulators (2 x 1.36 GB), of the
    # state (12 B a param: 8.18 GB), beside 384 micro-batches' layer inputs of its stage (96 / 8 layers x 2,048 x
    # 12,288 x 2 B, split 8 ways: 75.5 MB each, 28.99 GB); 48.09 GB when the weights were stored whole
    share = result.params / 64
    stash = 384 * 96 / 8 * 2048 * 12288 * 2 / 8
    assert result.memory.streaming == pytest.approx((2 * share * 2 + share * 12) / 4 + stash)
    assert result.memory.streaming / 1e9 == pytest.approx(39.90, abs=0.005)
    assert result.time.bubble_fraction == pytest.approx(7 / 391)
    assert result.time.tensor_parallel_s > 0 and result.time.streaming_s > 0 and result.time.data_parallel_s > 0


def test_main_plan_prints_the_report():
    text = main_plan(EXAMPLES / "bert_large_pod16.yaml")
    for part in ("memory per IPU", "per tile", "step time", "pipeline bubble", "data-parallel allreduce",
                 "bubble: p-1 = 3 of the pipeline's m+p-1 = 2051 ticks", "throughput", "assumptions"):
        assert part in text


def big_dp(tmp_path, hidden=8000):
    """tiny_dp.yaml with a wider model: r=4 replicas of 128M fp32 params need 1.68 GB per IPU."""
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
    assert "layouts of the same partition that fit, best first" in text


def test_the_layouts_that_fit_come_right_after_the_does_not_fit_line(tmp_path):
    """Regression: they came after the dozen lines of assumptions, and --json had none."""
    answer = plan_file(big_dp(tmp_path))
    lines = answer.text().splitlines()
    verdict = lines.index("DOES NOT FIT:")
    assert lines[verdict + 1].startswith("  needs 1.68 GB per IPU, SRAM holds 0.94 GB")
    assert lines[verdict + 2] == "layouts of the same partition that fit, best first:"
    best = answer.suggestions
    assert lines[verdict + 3] == f"  {suggestion_text(best[0])}"
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
    assert f"a layout that fits: {suggestion_text(best[0])}" in e.value.message


def test_a_fitting_plan_has_no_refusal_and_no_suggestions():
    answer = plan_file(EXAMPLES / "tiny_dp.yaml")
    assert answer.fits and answer.refusal() is None
    assert json.loads(answer.as_json())["suggestions"] == []
    assert "DOES NOT FIT" not in answer.text()


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
