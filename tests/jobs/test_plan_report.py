"""What `vipu plan` prints about a plan: the wording of its report (plan_report.py) and of its assumptions."""

from __future__ import annotations

from tests.jobs.helpers import bert_large, pod, transformer
from vipu.jobs import plan

PHASED = bert_large(p=4, r=4, micro_batch=1, micro_batches=512, rts=True, phased=True)


def test_a_phased_stash_is_split_only_across_a_tensor_group():
    """Regression: with t = 1 it said "split 1 ways"."""
    one = plan(PHASED, pod()).table()
    assert "stashed block inputs" in one and "split 1 ways" not in one and "(all 1 micro-batches" not in one
    four = plan(PHASED.model_copy(update={"layout": PHASED.layout.model_copy(update={"t": 4, "r": 1, "rts": False})}), pod())
    assert "batch serialisation; split 4 ways)" in four.table()


def test_the_compute_row_says_it_counts_the_compute_sets_syncs_and_util_does_not():
    result = plan(PHASED, pod())
    assert 0 < result.time.compute_sync_s < result.time.compute_s
    assert "  compute: the busiest stage's FLOPs at the calibrated efficiency, its attention scores' vector cycles," \
           " and the on-chip sync ending each of its compute sets (" in result.table()
    assert "per-IPU UTIL in `vipu logs` counts the FLOP and vector time only" in result.table()


def test_the_assumptions_say_compute_efficiency_ignores_the_micro_batch_size():
    line = plan(PHASED, pod()).assumptions[0]
    assert "the same for every micro-batch size" in line
    assert "within 5% of the best predicted throughput list the micro-batch size nearest the spec's first" in line


def test_fewer_micro_batches_than_stages_gets_a_note_with_the_fix():
    """Regression (walk31): 1F1B with 2 micro-batches on 4 stages planned a 60% bubble without a word."""
    few = bert_large(p=4, r=4, micro_batch=1, micro_batches=2)
    assert "  note: the bubble is 60% of the pipeline (micro_batches 2, p 4); at most 2 of the 4 stages compute at" \
           " once; set workload.layout.micro_batches to at least 4p = 16 to keep it under 20%" \
           in plan(few, pod()).table()
    assert "note: the bubble" not in plan(PHASED, pod()).table()


def test_a_bubble_over_a_third_of_the_pipeline_gets_a_note_with_the_fix():
    """Regression (walk33): only micro_batches < p got a note; 16 micro-batches on 16 stages (a bubble of 15 of 31
    ticks) planned without a word."""
    gpt = dict(layers=24, hidden=2048, heads=16, seq_len=1024, vocab=50304, micro_batch=1, recompute=True,
               offload_optimizer=True)
    text = plan(transformer(**gpt, p=16, r=4, micro_batches=16), pod("bow-pod64")).table()
    assert "  note: the bubble is 48% of the pipeline (micro_batches 16, p 16); set workload.layout.micro_batches to" \
           " at least 4p = 64 to keep it under 20% (the global batch is micro_batch x micro_batches x r: lower" \
           " micro_batch to keep it)" in text
    fewer = plan(transformer(**gpt, p=16, r=4, micro_batches=8), pod("bow-pod64")).table()
    assert "  note: the bubble is 65% of the pipeline (micro_batches 8, p 16); at most 8 of the 16 stages compute" \
           " at once; set workload.layout.micro_batches to at least 4p = 64" in fewer
    # a third or less: no note (p 4: 6 micro-batches, 3 of 9 ticks; 5 micro-batches, 3 of 8)
    assert "note: the bubble" not in plan(transformer(**gpt, p=4, micro_batches=6), pod()).table()
    assert "note: the bubble is 38%" in plan(transformer(**gpt, p=4, micro_batches=5), pod()).table()


def test_phased_execution_says_it_recomputes_whatever_recompute_says():
    """Regression (walk33): phased execution recomputes (as PopXL's phased backward does) even with recompute:
    false, and the plan did not say so. It plans the same either way, and the layout line says it."""
    asked = {flag: PHASED.model_copy(update={"layout": PHASED.layout.model_copy(update={"recompute": flag})})
             for flag in (False, True)}
    plain, recomputing = (plan(asked[flag], pod()) for flag in (False, True))
    assert plain.time == recomputing.time and plain.memory == recomputing.memory
    assert plain.table().splitlines()[1].endswith("phased execution, which recomputes")
    assert "which recomputes" not in recomputing.table().splitlines()[1]


def test_the_assumptions_say_what_amp_and_io_tiles_cost_and_do_not():
    """Walk33: lowering available_memory_proportion cost no time, and io_tiles never overlapped any transfer, and the
    plan did not say either."""
    lines = plan(PHASED, pod()).assumptions
    assert any(line.startswith("available_memory_proportion caps the matmul temporaries' memory only: a lower value"
                               " costs no time here") for line in lines)
    assert any(line.startswith("io_tiles take tiles, and their SRAM and FLOPs, from the model and do nothing else"
                               " here: host I/O and Streaming Memory transfers are not overlapped") for line in lines)
    # and it is so: a tenth of the matmul temporaries' room plans the same step
    tighter = PHASED.layout.model_copy(update={"available_memory_proportion": 0.06})
    capped = PHASED.model_copy(update={"layout": tighter})
    assert plan(capped, pod()).step_s == plan(PHASED, pod()).step_s
