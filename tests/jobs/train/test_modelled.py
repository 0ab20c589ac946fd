"""Modelled runs (execute: false): how long they hold their partition, and what they report, against the planner's
own numbers (planner.plan) for the same workload and Pod."""

from __future__ import annotations

import math

import pytest

from tests.jobs.helpers import bert_large, pod, transformer
from vipu.jobs.memory_estimate import stage_memory
from vipu.jobs.parts import PARTS
from vipu.jobs.planner import plan
from vipu.jobs.train import modelled as m
from vipu.jobs.train.poprun import local_environments
from vipu.jobs.train.results import RepeatedSteps, StepReport


def modelled(workload, steps: int):
    return workload.model_copy(update={"execute": False, "steps": steps})


BERT = modelled(bert_large(p=4, r=4, micro_batch=8, micro_batches=64, recompute=True, rts=True,
                           offload_optimizer=True), steps=20)
TP_PP = modelled(transformer(layers=4, t=2, p=2, r=2, micro_batch=2, micro_batches=4), steps=5)


def begin(workload, pod_name="bow-pod16", first_ipu=0, started=1000.0, scale=0.01) -> m.ModelledRun:
    return m.ModelledRun.begin(workload, pod(pod_name), first_ipu, started, scale)


@pytest.mark.parametrize("workload, scale", [(BERT, 1.0), (BERT, 0.001), (TP_PP, 0.5)])
def test_it_holds_its_partition_for_steps_x_the_predicted_step_x_the_scale(workload, scale):
    planned = plan(workload, pod())
    run = begin(workload, started=1000.0, scale=scale)
    want = workload.steps * planned.step_s * scale
    assert run.ending() == (pytest.approx(1000.0 + want, rel=1e-12), 0)
    assert m.hold_s(planned, workload.steps, scale) == pytest.approx(want, rel=1e-12)
    assert run.step.wall_s == pytest.approx(planned.step_s * scale, rel=1e-12)


def test_steps_are_reported_as_their_scaled_time_passes():
    run = begin(BERT)
    wall = run.step.wall_s
    assert run.steps(1000.0).steps_run == 0  # nothing yet at its start
    assert run.steps(1000.0 + 0.5 * wall).steps_run == 0
    assert run.steps(1000.0 + 3 * wall).steps_run == 3  # step 2 ended at 3 x wall
    assert run.steps(run.ending().at).steps_run == BERT.steps  # however the sums round
    assert run.steps(run.ending().at + 100).steps_run == BERT.steps  # never more than asked
    assert run.steps(999.0).steps_run == 0  # a clock read before the start
    assert run.steps(1000.0, completed=True).steps_run == BERT.steps


@pytest.mark.parametrize("workload, pod_name, first_ipu", [(BERT, "bow-pod16", 0), (TP_PP, "bow-pod64", 8)])
def test_a_step_reports_the_plans_time_parts_utilisation_and_memory(workload, pod_name, first_ipu):
    planned = plan(workload, pod(pod_name))
    step = begin(workload, pod_name, first_ipu).step
    assert step.modelled and step.loss is None  # computed nothing: no loss made up
    assert step.emulated_step_s == planned.step_s
    for _, field in PARTS:
        assert getattr(step, field) == getattr(planned.time, field), field
    assert step.bubble_fraction == planned.time.bubble_fraction
    assert step.comm_s == pytest.approx(planned.time.tensor_parallel_s + planned.time.pipeline_send_s
                                        + planned.time.data_parallel_s, rel=1e-12)
    assert step.bytes_per_link_type == {} and step.collectives == 0  # no bytes moved
    lay = workload.layout
    assert sorted(step.ipus) == list(range(first_ipu, first_ipu + lay.ipus))
    own = planned.time.compute_s - planned.time.compute_sync_s
    stages = [stage_memory(workload, s) for s in range(lay.p)]
    for ipu, report in step.ipus.items():
        stage = stages[(ipu - first_ipu) // lay.t % lay.p]  # shards innermost, then stages, then replicas
        assert report.utilisation == pytest.approx(own / planned.step_s, rel=1e-12)
        assert 0 < report.utilisation < 1
        assert report.memory_bytes == math.ceil(stage.sram)
        assert report.activation_bytes == math.ceil(stage.activations)
        assert report.streaming_bytes == math.ceil(stage.streaming)
    # the IPU needing most is the plan's verdict: its SRAM but the reserve, its Streaming Memory
    assert max(r.memory_bytes for r in step.ipus.values()) == math.ceil(planned.memory.total - planned.memory.reserved)
    assert max(r.streaming_bytes for r in step.ipus.values()) == math.ceil(planned.memory.streaming)


def test_a_completed_run_has_every_step_and_a_result_like_a_computed_one():
    planned = plan(BERT, pod())
    run = begin(BERT)
    result = run.result(run.ending().at, True, local_environments(BERT.layout, pod()))
    assert result.steps_run == BERT.steps == result.steps_requested and not result.stopped
    assert result.losses == [] and result.reports == []  # computed nothing; its steps are `modelled`'s
    assert result.modelled.time_scale == 0.01 and result.modelled.steps_run == BERT.steps
    reports = result.step_reports()
    assert len(reports) == BERT.steps and [r.step for r in reports] == list(range(BERT.steps))
    assert all(r.model_dump(exclude={"step"}) == run.step.model_dump(exclude={"step"}) for r in reports)
    assert result.emulated_step_s == result.predicted_step_s == planned.step_s
    assert result.throughput_samples_per_s == planned.throughput
    assert result.emulated_parts == result.predicted_parts == dict(planned.time.parts())
    assert result.wall_s == pytest.approx(run.ending().at - 1000.0)
    assert [u.ipu for u in result.ipu_usage] == list(range(16))
    assert [u.sram_peak_bytes for u in result.ipu_usage] == [r.memory_bytes for r in run.step.ipus.values()]
    assert [u.utilisation for u in result.ipu_usage] == [pytest.approx(r.utilisation) for r in run.step.ipus.values()]
    assert [(i.index, i.replicas, i.ipus) for i in result.instances] == [
        (k, [k], [4 * k + s for s in range(4)]) for k in range(4)]  # p=4 stages of replica k


def test_a_stopped_run_has_the_steps_whose_time_had_passed():
    run = begin(BERT)
    result = run.result(1000.0 + 7.5 * run.step.wall_s, False, [])
    assert result.steps_run == 7 and result.stopped and len(result.step_reports()) == 7
    nothing = run.result(1000.0, False, [])
    assert nothing.steps_run == 0 and nothing.emulated_step_s == 0 and nothing.ipu_usage == []
    assert nothing.predicted_step_s == run.planned.step_s  # the prediction stands either way


def test_the_plan_admission_kept_is_the_one_a_start_uses():
    workload = modelled(TP_PP, steps=3)
    kept = plan(workload, pod())
    m.remember(workload, pod(), kept)
    assert m.predicted(workload, pod()) is kept
    other = workload.model_copy(update={"steps": 4})  # another workload: planned afresh, then kept
    assert m.predicted(other, pod()) is m.predicted(other, pod())


def test_repeated_steps_read_as_a_list_of_numbered_steps():
    step = begin(TP_PP).step
    steps = RepeatedSteps(step, 3)
    assert len(steps) == 3 and bool(steps) and not RepeatedSteps(step, 0)
    assert [r.step for r in steps] == [0, 1, 2] and steps[-1].step == 2 and [r.step for r in steps[1:]] == [1, 2]
    assert isinstance(steps[0], StepReport) and steps[0].ipus == step.ipus
    with pytest.raises(IndexError):
        steps[3]


def test_a_modelled_run_says_its_steps_are_modelled_not_emulated():
    """Regression (walk40): `vipu logs` of a modelled run said "emulated step 3,386,341.1 us", though nothing ran."""
    from vipu.jobs.train.results import step_line

    run = begin(BERT)
    result = run.result(run.ending().at, True, local_environments(BERT.layout, pod()))
    line = step_line(result.step_reports()[0])
    assert f"  modelled step {run.step.emulated_step_s * 1e6:,.1f} us  (" in line and "emulated" not in line
