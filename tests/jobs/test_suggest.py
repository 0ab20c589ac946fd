"""A workload that cannot fit is rejected with the numbers and a layout that does fit, or told none exists."""

from __future__ import annotations

import json
import math
import re

import pytest
import yaml

from tests.jobs.helpers import bert_large, mlp, pod, transformer
from vipu.errors import InvalidArgument
from vipu.jobs import check_fits, plan
from vipu.jobs.assumptions import NEAR_BEST
from vipu.jobs.command import PlanAnswer
from vipu.jobs.suggest import candidate_layouts, micro_batch_sizes, suggest, suggestion_text

# BERT-Large on 16 IPUs as pure data parallelism, no recomputation: every IPU holds all 333.6M params:
# weights + gradients 2 x 667 MB = 1.33 GB before the Adam state (2.67 GB): far over 0.94 GB of SRAM
TOO_BIG = bert_large(r=16, micro_batch=8, micro_batches=512)
# the acceptance tester's spec: Graphcore's BERT-Large layout with its micro-batches in gpipe order and no
# recomputation: all 64 micro-batches' activations held at once, 16.2 GiB per IPU
GPIPE = bert_large(p=4, r=4, micro_batch=8, micro_batches=64, schedule="gpipe", rts=True, offload_optimizer=True)


def fitting(workload):
    """Every fitting layout, in suggest()'s order."""
    return suggest(workload, pod(), limit=10**6)


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
    # it ends with the spec's fields that change (walk31: "with RTS" named no field), and they make that layout
    fields = message.rsplit("; set in workload.layout: {", 1)[1].removesuffix(")").removesuffix("}")
    changes = {k: {"true": True, "false": False}.get(v, v) for k, v in (f.split(": ") for f in fields.split(", "))}
    assert TOO_BIG.layout.model_copy(update={k: v if isinstance(v, bool) else type(getattr(TOO_BIG.layout, k))(v)
                                             for k, v in changes.items()}) == best.layout
    # the suggestion keeps the partition and the global batch, and it does fit
    again = plan(TOO_BIG.model_copy(update={"layout": best.layout}), pod())
    assert again.fits and again.ipus == 16 and again.global_batch == TOO_BIG.global_batch


@pytest.mark.parametrize("workload", [TOO_BIG, GPIPE], ids=["data-parallel", "gpipe"])
def test_suggestions_are_ordered_by_throughput_but_near_the_best_by_micro_batch_and_deterministic(workload):
    ranked = fitting(workload)
    assert [c.layout for c in ranked] == [c.layout for c in fitting(workload)] and all(c.fits for c in ranked)
    best = max(c.throughput for c in ranked)
    near = [c for c in ranked if c.throughput >= best * (1 - NEAR_BEST)]
    assert ranked[:len(near)] == near  # the near-best first...

    def distance(c):  # ...by how far their micro-batch is from the spec's, in factors of two
        return abs(math.log2(c.layout.micro_batch / workload.layout.micro_batch))

    assert [distance(c) for c in near] == sorted(distance(c) for c in near)
    rest = [c.throughput for c in ranked[len(near):]]  # then the others by predicted throughput
    assert rest == sorted(rest, reverse=True)


def test_suggestions_try_the_other_schedule_and_say_it_keeps_the_maths():
    """Regression: the search never changed the schedule, so a gpipe layout that holds all its micro-batches'
    activations got only phased layouts (~2,300 samples/s) when 1f1b fits at over 5,000."""
    assert not plan(GPIPE, pod()).fits
    found = suggest(GPIPE, pod())
    best = found[0]
    assert best.layout.schedule == "1f1b" and not best.layout.phased and best.throughput > 5000
    assert best.global_batch == GPIPE.global_batch and best.ipus == 16
    assert best.throughput > 2 * max(c.throughput for c in fitting(GPIPE) if c.layout.order == "gpipe")
    assert " samples/s; 1f1b instead of gpipe keeps the maths: same micro-batches and gradients, reordered;" \
           " set in workload.layout: {" in suggestion_text(best, GPIPE.layout)
    assert "instead of" not in suggestion_text(best, best.layout)
    with pytest.raises(InvalidArgument, match="1f1b instead of gpipe keeps the maths"):
        check_fits(GPIPE, pod(), ipus=16)


def pasted(text: str, asked):
    """The layout a user gets by pasting the mapping a suggestion ends with into the spec's workload.layout."""
    fields = yaml.safe_load(text.rsplit("set in workload.layout: ", 1)[1].removesuffix(")"))
    return asked.model_copy(update={"layout": type(asked.layout)(**{**asked.layout.model_dump(), **fields})})


def test_a_suggestion_pastes_back_into_the_spec():
    """Regression (walk33): it ended {..., layers_per_stage: None}; pasted, the spec was refused ("layers_per_stage:
    Input should be a valid tuple, not 'None'"). Its values are YAML's: null, true/false, lists."""
    uneven = bert_large(p=4, r=4, micro_batch=8, micro_batches=2048, recompute=True, rts=True, offload_optimizer=True,
                        layers_per_stage=[3, 3, 3, 15])
    for found in suggest(uneven, pod()):
        text = suggestion_text(found, uneven.layout)
        assert "None" not in text and "True" not in text and "False" not in text
        again = plan(pasted(text, uneven), pod())
        assert again.fits and again.layout == found.layout and again.throughput == pytest.approx(found.throughput)
    # against the defaults: a list is a YAML list, a flag true
    staged = suggest(uneven, pod())[0].model_copy(update={"layout": uneven.layout})
    assert "layers_per_stage: [3, 3, 3, 15]" in suggestion_text(staged)
    assert "recompute: true" in suggestion_text(staged)


def test_the_search_is_bounded_and_tries_each_layout_once():
    layouts = [lay.describe() for lay in candidate_layouts(GPIPE, 16)]
    assert len(layouts) == len(set(layouts)) < 2000
    # phased execution runs gpipe order whatever the schedule says: tried once, with the spec's
    assert not any(lay.phased and lay.schedule != "gpipe" for lay in candidate_layouts(GPIPE, 16))


@pytest.mark.parametrize("asked, per_replica, want", [
    (8, 512, [8, 4, 2, 1, 16, 32]),  # halves down to 1, doubles up to MAX_GROWTH x
    (8, 16, [8, 4, 2, 1, 16]),  # each must divide a replica's samples per step
    (3, 12, [3, 1, 6, 12]),
    (1, 1, [1]),
])
def test_micro_batch_sizes(asked, per_replica, want):
    assert micro_batch_sizes(asked, per_replica) == want


def test_json_byte_counts_are_whole_numbers():
    """Regression: `vipu plan --json` gave memory_per_ipu_bytes 274443724.79999995."""
    result = plan(GPIPE, pod())
    data = json.loads(json.dumps(PlanAnswer(result, suggest(GPIPE, pod())).as_data()))
    memory = data["memory"]
    assert memory["total"] == math.ceil(result.memory.total) and memory["fits"] is False
    assert all(type(memory[name]) is int for name in ("weights", "activations", "reserved", "total", "per_tile",
                                                       "streaming", "streaming_capacity", "streaming_mean"))
    assert all(type(s["memory_per_ipu_bytes"]) is int for s in data["suggestions"])


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


# The walker's spec (walk40): a GPT-style 2.65B transformer, t4 p4 r4 with 32 I/O tiles on a Pod64; its search cost
# 2.7 s of CPU inside `vipu submit`, which then timed out
GPT_POD64 = transformer(layers=32, hidden=2560, heads=32, seq_len=2048, vocab=50257, t=4, p=4, r=4, micro_batch=4,
                        micro_batches=64, io_tiles=32)
PINNED = [  # suggest(limit=3) before the search was made cheaper (memory first, stage costs cached): the same after
    (TOO_BIG, "bow-pod16", [("t=1 p=4 r=4, micro-batch 4 x 4096 (1f1b) with RTS, optimiser offload", 6204.46),
                            ("t=1 p=4 r=4, micro-batch 4 x 4096 (1f1b) with optimiser offload", 6131.84),
                            ("t=1 p=2 r=8, micro-batch 4 x 2048 (1f1b) with recomputation, RTS, optimiser offload",
                             5486.58)]),
    (GPIPE, "bow-pod16", [("t=1 p=4 r=4, micro-batch 4 x 128 (1f1b) with RTS, optimiser offload", 5333.96),
                          ("t=1 p=4 r=4, micro-batch 2 x 256 (1f1b) with RTS", 5249.47),
                          ("t=1 p=4 r=4, micro-batch 8 x 64 (1f1b) with recomputation, RTS", 4909.26)]),
    (GPT_POD64, "bow-pod64", [
        ("t=2 p=1 r=32, micro-batch 2 x 16 (gpipe, batch-serialised) with RTS, phased execution, which recomputes,"
         " 32 I/O tiles", 87.3788),
        ("t=2 p=2 r=16, micro-batch 2 x 32 (gpipe, batch-serialised) with RTS, phased execution, which recomputes,"
         " 32 I/O tiles", 86.0997),
        ("t=2 p=1 r=32, micro-batch 1 x 32 (gpipe, batch-serialised) with RTS, phased execution, which recomputes,"
         " 32 I/O tiles", 87.0542)]),
]


@pytest.mark.parametrize("workload, pod_name, want", PINNED, ids=["data-parallel", "gpipe", "gpt-pod64"])
def test_the_cheaper_search_suggests_what_the_full_one_did(workload, pod_name, want):
    found = suggest(workload, pod(pod_name))
    assert [(c.layout.describe(), round(c.throughput, 2)) for c in found] == [(d, round(t, 2)) for d, t in want]


def test_the_search_times_only_the_layouts_that_fit_and_searches_a_spec_once(monkeypatch):
    """Regression (walk40): every candidate was timed as well as sized, and a submit after `--test-only` searched
    again: seconds of CPU inside the submit call, which timed out on a busy controller."""
    import vipu.jobs.planner as planner
    import vipu.jobs.suggest as search

    timed, sized = [], []
    real_time, real_memory = planner.step_time, search.memory_if_fits
    monkeypatch.setattr(planner, "step_time", lambda *a: timed.append(1) or real_time(*a))
    monkeypatch.setattr(search, "memory_if_fits", lambda *a: sized.append(1) or real_memory(*a))
    search.ranked_fitting.cache_clear()
    everything = fitting(GPIPE)
    candidates = len(list(candidate_layouts(GPIPE, 16)))
    assert len(sized) == candidates > len(timed) == len(everything)
    sized.clear()
    for _ in range(2):  # `vipu submit --test-only`, then the submit
        with pytest.raises(InvalidArgument):
            check_fits(GPIPE, pod(), ipus=16)
    assert len(sized) == candidates  # the same spec: no second search


def test_the_search_s_early_no_is_the_full_memory_s_no():
    """memory_if_fits stops before mapping the tiles when the stages' bytes cannot fit: it says what memory() says."""
    from vipu.jobs.assumptions import DEFAULT
    from vipu.jobs.memory_estimate import memory, memory_if_fits

    for layout in candidate_layouts(GPIPE, 16):
        candidate = GPIPE.model_copy(update={"layout": layout})
        full, early = memory(candidate, pod(), DEFAULT), memory_if_fits(candidate, pod(), DEFAULT)
        assert (early == full) if full.fits else early is None, layout.describe()
