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
