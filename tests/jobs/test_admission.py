"""check_train: which train jobs are queued. A modelled one (execute: false) needs only to fit; one that is executed
must also be small enough for the emulator, and is told it could be modelled when it fits."""

from __future__ import annotations

import pytest
import yaml

from tests.jobs.helpers import bert_large, pod, transformer
from tests.jobs.test_examples import EXAMPLES
from vipu.errors import InvalidArgument
from vipu.jobs.admission import check_train
from vipu.jobs.planner import plan
from vipu.jobs.train import modelled
from vipu.scheduler.job_spec import JobSpec, parse_spec

BERT = bert_large(p=4, r=4, micro_batch=8, micro_batches=64, recompute=True, rts=True, offload_optimizer=True)
UNFIT = bert_large(r=16, micro_batch=64, micro_batches=4)  # whole BERT-Large and its activations on each IPU
TINY = transformer(r=4, micro_batch=2)


def job(workload, execute: bool) -> JobSpec:
    return JobSpec(name="j", ipus=workload.layout.ipus, workload=workload.model_copy(update={"execute": execute}))


@pytest.mark.parametrize("name, workload, execute, refusal", [
    ("small, executed", TINY, True, None),
    ("small, modelled", TINY, False, None),
    ("fits but too big to execute", BERT, True, ["too big to execute in the emulator",
                                                 "submit it with workload.execute: false to model it"]),
    ("fits, modelled", BERT, False, None),
    ("does not fit, executed", UNFIT, True, ["does not fit", "a layout that fits",
                                             "whatever the layout, it cannot run here"]),
    ("does not fit, modelled", UNFIT, False, ["does not fit", "a layout that fits"]),
])
def test_admission(name, workload, execute, refusal):
    spec = job(workload, execute)
    if refusal is None:
        check_train(spec, pod())
        return
    with pytest.raises(InvalidArgument) as e:
        check_train(spec, pod())
    assert all(part in e.value.message for part in refusal), e.value.message
    if not execute:  # its fit is all that was wrong: nothing about the emulator
        assert "emulator" not in e.value.message and "execute: false" not in e.value.message


def test_a_modelled_job_admitted_keeps_its_plan_for_its_start(monkeypatch):
    spec = job(BERT.model_copy(update={"steps": 7}), execute=False)
    check_train(spec, pod())

    def plan_again(*args):
        raise AssertionError("planned again at the start, under the controller's lock")

    monkeypatch.setattr(modelled, "plan", plan_again)
    assert modelled.predicted(spec.workload, pod()) == plan(spec.workload, pod())


def test_the_modelled_gpt3_example_is_admitted_on_a_pod256_and_its_executed_twin_is_not():
    modelled_spec = parse_spec(yaml.safe_load((EXAMPLES / "gpt3_pod256_modelled.yaml").read_text()))
    assert modelled_spec.workload.modelled
    check_train(modelled_spec, pod("bow-pod256"))
    with pytest.raises(InvalidArgument, match="execute: false to model it"):
        check_train(modelled_spec.model_copy(update={"workload": modelled_spec.workload.model_copy(
            update={"execute": True})}), pod("bow-pod256"))


def test_layers_per_stage_that_is_the_even_split_is_executed():
    """Regression (walk40): `layers_per_stage: [4]` with p 1, what an executed pipeline runs anyway, was refused."""
    check_train(job(transformer(layers=4, layers_per_stage=[4]), True), pod())
    check_train(job(transformer(layers=4, p=2, layers_per_stage=[2, 2]), True), pod())
    with pytest.raises(InvalidArgument) as e:
        check_train(job(transformer(layers=4, p=2, layers_per_stage=[1, 3]), True), pod())
    assert ("workload.layout.layers_per_stage is [1, 3]: executed pipelines split the layers evenly, so drop it"
            " (or give [2, 2])") in e.value.message


def test_too_many_ipus_at_submit_names_the_layout_degree_to_change_too():
    """Regression (walk40): submitting 128 IPUs on a Pod64 said only "give ipus 64 or less", while `vipu plan --pod`
    also named r; a spec without a layout keeps the plain fix."""
    from vipu.scheduler.config import SchedulerConfig
    from vipu.scheduler.submission import resolve

    pod64 = pod("bow-pod64")
    with pytest.raises(InvalidArgument) as e:
        resolve(job(transformer(t=2, r=64), True), pod64, SchedulerConfig())
    assert e.value.message == ("ipus is 128 but bow-pod64 has 64 IPUs; the largest partition is 64: use fewer replicas"
                               " (ipus 64 and workload.layout.r 32), or a Pod that has 128 IPUs (bow-pod128)")
    with pytest.raises(InvalidArgument, match="the largest partition is 64: give ipus 64 or less, or a Pod"):
        resolve(JobSpec(ipus=128), pod64, SchedulerConfig())
