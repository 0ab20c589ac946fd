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
from vipu.jobs.suggest import suggestion_text
from vipu.scheduler.job_spec import JobSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["bert_large_pod16.yaml", "gpt3_pod256.yaml", "gpt3_pod256_modelled.yaml", "tiny_dp.yaml", "tiny_pp.yaml",
         "tiny_tp.yaml"]


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
    ("bert_large_pod16.yaml", 1, 4, 4), ("gpt3_pod256.yaml", 8, 8, 4), ("gpt3_pod256_modelled.yaml", 8, 8, 4),
])
def test_example_layouts(name, t, p, r):
    spec, _ = load_plan_spec(EXAMPLES / name)
    lay = spec.workload.layout
    assert (lay.t, lay.p, lay.r) == (t, p, r)


def test_gpt3_plan_reports_memory_and_time():
    # 174.6G params (96 x 1.812G + 0.64G embeddings). Phased: in SRAM one feed-forward block split 8 ways,
    # (2 x 4 x 12,288^2 + 4 x 12,288) / 8 sharded + 3 x 12,288 replicated (a bias, a layer norm) = 151M params ->
    # 302 MB of weights, 302 MB of gradients, 95% of SRAM with its activations and the reserve; the rest in
    # Streaming Memory, within a Bow-2000's 256 GB / 4 IPUs
    spec, pod = load_plan_spec(EXAMPLES / "gpt3_pod256.yaml")
    result = plan(spec.workload, pod)
    h = 12288
    assert result.params == pytest.approx(174.6e9, rel=1e-3)
    assert result.memory.weights == ((8 * h * h + 4 * h) / 8 + 3 * h) * 2
    assert result.memory.total / result.memory.sram_bytes == pytest.approx(0.953, abs=0.001)
    # the first stage holds most: 12 layers ((12 h^2 + 7 h) / 8 + 6 h each) and the embedding with its tied head
    # (50,257 + 2,048 + 2) x h / 8; RTS stores a quarter of its weights and gradient accumulators (2 x 1.40 GB) and
    # of its state (12 B a param: 8.40 GB), beside the block inputs of all m micro-batches (batch serialisation):
    # the attention's and the feed-forward's (2,048 x h each) of every layer and the embedding's (token ids and the
    # head's input), 2 B each, split 8 ways: 0.157 GB a micro-batch
    params = 12 * ((12 * h * h + 7 * h) // 8 + 6 * h) + (50257 + 2048 + 2) * h // 8
    quarter = math.ceil(params / 4)
    m = spec.workload.layout.micro_batches
    stash = m * (24 * 2048 * h + 2048 + 2048 * h) * 2 / 8
    mem = result.memory
    assert (mem.streaming_stage, mem.streaming_weights, mem.streaming_gradients) == (0, quarter * 2, quarter * 2)
    assert (mem.streaming_optimizer, mem.streaming_stash) == (quarter * 12, stash)
    assert mem.streaming == pytest.approx(quarter * 16 + stash)
    assert mem.streaming < mem.streaming_capacity
    assert mem.streaming_mean < mem.streaming  # the later stages hold no embedding
    assert result.time.bubble_fraction == pytest.approx(7 / (m + 7))
    assert result.time.tensor_parallel_s > 0 and result.time.streaming_s > 0 and result.time.data_parallel_s > 0


def test_gpt3_takes_the_largest_global_batch_whose_stash_fits():
    """Regression: the plan stashed the block inputs of the 8 micro-batches 1F1B keeps in flight (1.2 GiB), while
    its step time streamed the weights 4 times a step, which takes batch serialisation: every micro-batch's phase
    inputs stashed at once. So counted, the paper's global batch of 1,536 sequences needs 66.7 GiB per IPU of the
    machine's 59.6 (on 256 IPUs the stash per IPU does not shrink with t, p or r), and the example takes the
    largest multiple of 64 sequences that fits."""
    spec, pod = load_plan_spec(EXAMPLES / "gpt3_pod256.yaml")

    def with_batch(sequences: int):
        layout = spec.workload.layout.model_copy(update={"micro_batches": sequences // 4})
        return plan(spec.workload.model_copy(update={"layout": layout}), pod)

    assert spec.workload.layout.global_batch == 1280
    assert with_batch(1280).memory.fits_streaming and not with_batch(1280 + 64).memory.fits_streaming
    paper = with_batch(1536).memory
    assert not paper.fits_streaming and paper.streaming / 2**30 == pytest.approx(66.7, abs=0.05)


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
    assert "layouts of the same partition that fit, best first" in text


def test_the_layouts_that_fit_come_right_after_the_does_not_fit_line(tmp_path):
    """Regression: they came after the dozen lines of assumptions, and --json had none."""
    answer = plan_file(big_dp(tmp_path))
    lines = answer.text().splitlines()
    verdict = lines.index("DOES NOT FIT:")
    assert lines[verdict + 1].startswith("  needs 1.6 GiB per IPU, SRAM holds 897.0 MiB")
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
