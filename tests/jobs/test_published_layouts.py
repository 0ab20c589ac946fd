"""The layouts Graphcore's published configs use, as a spec states them: a masked-token MLM head, uneven pipeline
stages (layers_per_ipu) and packed sequences."""

from __future__ import annotations

import pytest

from tests.jobs.helpers import bert_large, pod
from vipu.errors import InvalidArgument
from vipu.jobs import plan
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.calibration import bert_spec, plan_of
from vipu.jobs.train_spec import plan_spec

H, S, V = 1024, 128, 30400
LAYER = 2 * S * 12 * H * H + 4 * S * S * H  # projections and feed-forward, attention scores and sum
PEAK = 1472 * 128 * 1.85e9
# a layer's attention scores (16 heads x S^2) a sample on the vector units: forward twice (recomputing) and backward
SCORES = 16 * S * S * (2 * DEFAULT.score_forward_cycles + DEFAULT.score_backward_cycles) / (1472 * 1.85e9)


def test_the_mlm_head_runs_on_the_masked_tokens_only():
    whole = bert_large(p=4, r=4, micro_batch=8, micro_batches=16).model
    masked = whole.model_copy(update={"mask_tokens": 20})
    assert whole.head_flops() == 2 * S * H * V
    assert masked.head_flops() == 2 * 20 * H * V
    assert masked.forward_flops() == 24 * LAYER + 2 * 20 * H * V


def test_uneven_stages_time_the_busiest_stage():
    # [3, 7, 7, 7]: the first stage has the embedding and the tied head (20 masked tokens), the others 7 layers;
    # a 7-layer stage is the busiest: m b x 7 layers x 4 passes (recomputing) at the matmul efficiency, and their
    # attention scores on the vector units
    spec = bert_spec(16, 24, H, 16, S, 20, 8, 65_536, [3, 7, 7, 7])
    result = plan_of(spec, DEFAULT)
    sets = 2 * 0.15e-6  # the on-chip syncs ending the forward and backward compute sets
    tick = 8 * 7 * (LAYER * 4 / (PEAK * DEFAULT.compute_efficiency) + SCORES) + sets
    assert result.time.compute_s == pytest.approx(2048 * tick)
    even = plan_of(bert_spec(16, 24, H, 16, S, 20, 8, 65_536, [6, 6, 6, 6]), DEFAULT)
    first = (8 * ((6 * LAYER + 2 * 20 * H * V) * 4 / (PEAK * DEFAULT.compute_efficiency) + 6 * SCORES)
             + sets)  # the busiest
    assert even.time.compute_s == pytest.approx(2048 * first)


def test_packing_counts_sequences_not_packs():
    packed = bert_spec(16, 24, H, 16, S, 20, 8, 54_784, [3, 7, 7, 7], sequences_per_pack=1.2)
    result = plan_of(packed, DEFAULT)
    assert result.global_batch == 54_784
    assert result.throughput == pytest.approx(54_784 * 1.2 / result.step_s)
    plain = plan_of(bert_spec(16, 24, H, 16, S, 20, 8, 54_784, [3, 7, 7, 7]), DEFAULT)
    assert result.step_s == pytest.approx(plain.step_s)  # a pack is a sequence's tokens: the same work


@pytest.mark.parametrize("change, words", [
    ({"layers_per_stage": [3, 7, 7, 6]}, "layers_per_stage [3, 7, 7, 6] adds up to 23 but the transformer model"
                                         " has 24 layers"),
    ({"layers_per_stage": [12, 12]}, "layers_per_stage has 2 entries but p is 4"),
])
def test_layers_per_stage_must_cover_the_stages_and_layers(change, words):
    spec = bert_spec(16, 24, H, 16, S, 20, 8, 65_536, [3, 7, 7, 7])
    spec["workload"]["layout"].update(change)
    with pytest.raises(InvalidArgument, match=words.replace("[", r"\[").replace("]", r"\]")):
        plan_spec(spec)


def test_mask_tokens_need_a_vocabulary():
    spec = bert_spec(16, 24, H, 16, S, 20, 8, 65_536, [3, 7, 7, 7])
    spec["workload"]["model"]["vocab"] = None
    with pytest.raises(InvalidArgument, match="mask_tokens is 20 but there is no vocab: .*; set vocab, or drop"):
        plan_spec(spec)


def test_the_published_example_plans_its_config():
    # examples/bert_large_pod16.yaml is Graphcore's pretrain_large_128.json: its prediction is the fitted point
    from pathlib import Path

    from vipu.jobs.train_spec import load_plan_spec

    spec, found = load_plan_spec(Path(__file__).parents[2] / "examples/bert_large_pod16.yaml")
    assert spec.workload.layout.layers_per_stage == (3, 7, 7, 7) and spec.workload.model.mask_tokens == 20
    assert plan(spec.workload, found, DEFAULT).throughput == pytest.approx(5_179, rel=0.01)
    assert found == pod("bow-pod16")
