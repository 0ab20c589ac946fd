"""A train workload's validation: every error names the field and says what to use instead."""

from __future__ import annotations

import json

import pytest

from vipu.errors import InvalidArgument
from vipu.jobs import TrainWorkload, plan_spec

TINY = {"kind": "transformer", "layers": 2, "hidden": 64, "heads": 4, "seq_len": 16}


def spec(ipus=4, model=None, **layout):
    return {"ipus": ipus, "workload": {"kind": "train", "model": model or TINY, "layout": layout or {"r": ipus}}}


@pytest.mark.parametrize("name, data, want", [
    ("t not a power of two", spec(ipus=12, t=3, r=4), ["layout", "t is 3, not a power of two", "use 2 or 4"]),
    ("rts without replicas", spec(ipus=1, rts=True), ["layout", "rts is true but r is 1"]),
    ("phased and offload", spec(ipus=1, phased=True, offload_optimizer=True), ["layout", "drop offload_optimizer"]),
    ("t does not divide heads", spec(ipus=8, t=8), ["layout", "t is 8, which does not divide heads 4"]),
    ("p above layers", spec(ipus=4, p=4), ["layout", "p is 4", "2 layers", "use p <= 2"]),
    ("heads do not divide hidden", spec(model={**TINY, "heads": 5}), ["model", "heads is 5", "hidden 64"]),
    ("unknown layout field", spec(q=2), ["layout.q", "unknown field"]),
    ("missing model", {"ipus": 4, "workload": {"kind": "train"}}, ["workload.model", "required"]),
    ("unknown model kind", spec(model={"kind": "lstm"}), ["workload.model", "lstm"]),
    ("t x p x r is not ipus", spec(ipus=16, t=2, r=4), ["invalid plan spec: workload.layout: t x p x r",
                                                          "2 x 1 x 4 = 8", "set r to 8"]),
    ("ipus not a power of two", spec(ipus=12, r=4), ["ipus is 12, not a power of two"]),
    ("ipus beyond the Pod", {**spec(ipus=64, r=64), "pod": "bow-pod16"}, ["invalid plan spec: ipus is 64",
                                                                                  "bow-pod16 has 16"]),
    ("not a train workload", {"ipus": 4, "workload": {"kind": "sleep", "duration": 1}}, ["workload.kind", "train"]),
    ("batch-norm groups do not divide r", spec(ipus=4, r=4, model={"kind": "resnet50", "batch_norm_replicas": 8}),
     ["layout", "r is 4 but the model's batch_norm_replicas is 8", "give batch_norm_replicas one of 1, 2, 4, or an r"
      " that is a multiple of 8"]),
    # walk40: each refusal's fix must be one that can be applied: r is a power of two, and vocab was set
    ("batch-norm groups of 3", spec(ipus=4, r=4, model={"kind": "resnet50", "batch_norm_replicas": 3}),
     ["give batch_norm_replicas one of 1, 2, 4 (r is a power of two, so no r is a multiple of 3)"]),
    ("more masked tokens than positions", spec(model={**TINY, "vocab": 30400, "mask_tokens": 500}),
     ["mask_tokens is 500 but a sample has seq_len (16) positions; give mask_tokens at most 16"]),
    ("masked tokens without a vocab", spec(model={**TINY, "mask_tokens": 4}),
     ["mask_tokens is 4 but there is no vocab", "set vocab, or drop mask_tokens"]),
    ("a misspelt model field is named by its path in the spec, without the union's tag",
     spec(model={**TINY, "hiden": 64}), ["workload.model.hiden: unknown field"]),
    ("an unknown pod names the spec's field", {**spec(), "pod": "bow-pod999"}, ["plan spec: pod 'bow-pod999' is neither"]),
    ("no ipus and no pod: the sizes of every preset", spec(ipus=0, r=1), ["from 1 to 1024"]),
    ("not a mapping", [1, 2], ["expected a mapping"]),
    ("negative steps", {**spec(), "workload": {**spec()["workload"], "steps": 0}}, ["workload.steps"]),
])
def test_invalid_specs_name_the_field(name, data, want):
    with pytest.raises(InvalidArgument) as e:
        plan_spec(data)
    for part in want:
        assert part in e.value.message, e.value.message


def test_job_spec_fields_are_ignored_and_pod_defaults_to_the_smallest_preset():
    data = {**spec(ipus=32, r=32), "name": "j", "time_limit": "10m", "qos": "normal"}
    parsed, pod = plan_spec(data)
    assert pod.name == "bow-pod64"
    assert parsed.workload.global_batch == 32


def test_workload_round_trips_through_json():
    work = TrainWorkload(model=TINY, layout={"t": 2, "r": 2, "micro_batch": 4, "micro_batches": 3})
    again = TrainWorkload.model_validate_json(work.model_dump_json())
    assert again == work
    assert again.global_batch == 4 * 3 * 2


def test_a_second_tensor_axis_is_for_transformers_and_must_divide_hidden():
    from pydantic import ValidationError

    from vipu.jobs.train_spec import TrainWorkload as Workload

    mlp = {"kind": "mlp", "layers": 2, "hidden": 8, "inputs": 4, "outputs": 2}
    with pytest.raises(ValidationError, match="t2 is 2, but two-dimensional tensor parallelism is modelled for"
                                              " transformer models only"):
        Workload(model=mlp, layout={"t2": 2})
    odd = {"kind": "transformer", "layers": 2, "hidden": 12, "heads": 4, "seq_len": 4}
    with pytest.raises(ValidationError, match="t2 is 8, which does not divide hidden 12"):
        Workload(model=odd, layout={"t2": 8})
    with pytest.raises(ValidationError, match="t2 is 3, not a power of two"):
        Workload(model=odd, layout={"t2": 3})


def test_a_spec_too_big_for_its_pod_names_fewer_replicas_or_a_pod_that_has_them(tmp_path):
    """Regression (walk33): "ipus is 128 but bow-pod64 has 64 IPUs; the largest partition is 64" named no fix, and
    `vipu plan --pod bow-pod128` was refused the same, the spec's own Pod checked first."""
    from vipu.jobs.command import plan_file

    spec = {"ipus": 128, "pod": "bow-pod64", "workload": {
        "model": {"kind": "mlp", "layers": 16, "hidden": 256, "inputs": 8, "outputs": 4},
        "layout": {"p": 8, "r": 16, "micro_batch": 4, "micro_batches": 32}}}
    with pytest.raises(InvalidArgument) as e:
        plan_spec(spec)
    assert e.value.message.endswith(
        "ipus is 128 but bow-pod64 has 64 IPUs; the largest partition is 64: use fewer replicas (ipus 64 and"
        " workload.layout.r 8), or a Pod that has 128 IPUs (bow-pod128: the spec's pod, or `vipu plan --pod`)")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    answer = plan_file(path, "bow-pod128")
    assert answer.plan.pod == "bow-pod128" and answer.plan.ipus == 128


NOT_A_NUMBER = "Input should be a valid integer, not true; give a number, not true or false"


@pytest.mark.parametrize("data, field", [
    (spec(ipus=4, r=4, micro_batch=True), "workload.layout.micro_batch"),
    (spec(ipus=1, r=True), "workload.layout.r"),
    (spec(ipus=1, io_tiles=True), "workload.layout.io_tiles"),
    (spec(ipus=2, p=2, layers_per_stage=[1, True]), "workload.layout.layers_per_stage.1"),
    (spec(model={**TINY, "layers": True}), "workload.model.layers"),
    (spec(model={**TINY, "vocab": True}), "workload.model.vocab"),
    (spec(model={"kind": "resnet50", "batch_norm_replicas": True}), "workload.model.batch_norm_replicas"),
    ({**spec(), "workload": {**spec()["workload"], "steps": True}}, "workload.steps"),
    ({**spec(), "ipus": True}, "ipus"),
])
def test_a_boolean_is_not_a_layout_or_model_number(data, field):
    """Regression (walk40): `micro_batch: true` was planned and submitted as micro-batch 1, and `r: true` read as
    r=1 with no word of the `true`; `ipus: true` was refused as here."""
    with pytest.raises(InvalidArgument) as e:
        plan_spec(data)
    assert f"{field}: {NOT_A_NUMBER}" in e.value.message, e.value.message


def test_a_boolean_is_not_a_number_in_a_job_pod_file_or_scheduler_config():
    from vipu.hardware.pod import PodConfig
    from vipu.hardware.pod_files import load_pod
    from vipu.scheduler.config import SchedulerConfig
    from vipu.scheduler.job_spec import load_spec

    with pytest.raises(InvalidArgument, match=f"nice: {NOT_A_NUMBER}"):
        load_spec("ipus: 4\nnice: true", "job.yaml")
    with pytest.raises(InvalidArgument, match=f"workload.exit_code: {NOT_A_NUMBER}"):
        load_spec("ipus: 4\nworkload: {kind: sleep, duration: 1, exit_code: true}", "job.yaml")
    bow = load_pod("bow-pod16").model_dump()
    for model, data in [(SchedulerConfig, {"max_jobs": True}), (SchedulerConfig, {"weights": {"age": True}}),
                        (PodConfig, {**bow, "ilds": True}),
                        (PodConfig, {**bow, "ipu": {**bow["ipu"], "clock_hz": True}})]:
        with pytest.raises(ValueError, match="valid (integer|number)"):
            model.model_validate(data)


@pytest.mark.parametrize("data, field", [
    (spec(ipus=4, r=4, available_memory_proportion=True), "workload.layout.available_memory_proportion"),
    (spec(model={**TINY, "vocab": 64, "sequences_per_pack": True}), "workload.model.sequences_per_pack"),
    ({**spec(), "workload": {**spec()["workload"], "learning_rate": True}}, "workload.learning_rate"),
])
def test_a_boolean_is_not_a_fraction_either_but_1e_3_written_in_yaml_still_is(data, field):
    with pytest.raises(InvalidArgument) as e:
        plan_spec(data)
    assert f"{field}: Input should be a valid number, not true; give a number, not true or false" in e.value.message
    # PyYAML reads 1e-3 (no dot) as text; a float field takes it, as it did before
    parsed, _ = plan_spec({**spec(), "workload": {**spec()["workload"], "learning_rate": "1e-3"}})
    assert parsed.workload.learning_rate == 0.001
