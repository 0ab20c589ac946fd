"""A workload that cannot fit is rejected with the numbers and a layout that does fit, or told none exists."""

from __future__ import annotations

import re

import pytest

from tests.jobs.helpers import bert_large, mlp, pod, transformer
from vipu.errors import InvalidArgument
from vipu.jobs import check_fits, plan
from vipu.jobs.suggest import suggest

# BERT-Large on 16 IPUs as pure data parallelism, no recomputation: every IPU holds all 333.6M params:
# weights + gradients 2 x 667 MB = 1.33 GB before the Adam state (2.67 GB): far over 0.94 GB of SRAM
TOO_BIG = bert_large(r=16, micro_batch=8, micro_batches=512)


def test_too_large_model_is_rejected_with_the_numbers_and_a_layout_that_fits():
    with pytest.raises(InvalidArgument) as e:
        check_fits(TOO_BIG, pod(), ipus=16)
    message = e.value.message
    assert "workload.layout does not fit bow-pod16" in message
    assert re.search(r"needs [\d.]+ GiB per IPU, SRAM holds 897\.0 MiB", message), message
    assert "per tile" in message and "of 624 KiB" in message
    assert "a layout that fits: t=" in message
    best = suggest(TOO_BIG, pod(), limit=1)[0]
    assert best.layout.describe() in message
    # the suggestion keeps the partition and the global batch, and it does fit
    again = plan(TOO_BIG.model_copy(update={"layout": best.layout}), pod())
    assert again.fits and again.ipus == 16 and again.global_batch == TOO_BIG.global_batch


def test_suggestions_are_ordered_by_throughput_and_deterministic():
    first = suggest(TOO_BIG, pod(), limit=3)
    assert [c.layout for c in first] == [c.layout for c in suggest(TOO_BIG, pod(), limit=3)]
    assert [c.throughput for c in first] == sorted((c.throughput for c in first), reverse=True)
    assert all(c.fits for c in first)


def test_no_layout_fits_says_so():
    # GPT-3's feed-forward block alone is 2 x 4 x 12,288^2 = 1.21G params: split 4 ways, its fp16 weights and
    # gradients take 1.2 GB, more than one IPU's SRAM, so no layout of 4 IPUs holds even one phase
    gpt3 = transformer(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257, r=4)
    with pytest.raises(InvalidArgument) as e:
        check_fits(gpt3, pod(), ipus=4)
    assert "no layout of 4 IPUs with global batch 4 fits" in e.value.message


def test_a_fitting_workload_returns_its_plan():
    result = check_fits(mlp(r=4), pod(), ipus=4)
    assert result.fits and result.ipus == 4


def test_check_fits_checks_the_partition_size():
    with pytest.raises(InvalidArgument, match="t x p x r is 1 x 1 x 4 = 4, but the job asks for 8"):
        check_fits(mlp(r=4), pod(), ipus=8)
