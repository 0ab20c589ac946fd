"""The `train` workload of a job spec, and the plan file `vipu plan SPEC` reads (the job spec's shape).

TrainWorkload is a workload kind (kind: train) that registers itself with the scheduler's JobSpec on import. A plan file is a job
spec: {ipus, workload: {kind: train, ...}} plus an optional `pod` (a preset name or a Pod file; default: the
smallest preset that holds `ipus`). Other job-spec fields (name, time_limit, qos...) are the scheduler's to check:
`vipu plan` passes its check in (plan_spec's check_job).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Callable, Literal, Union

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from vipu.documents import read_document
from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import PRESETS, load_pod, preset_with
from vipu.jobs.convnet import ConvNetModel
from vipu.jobs.layout import Layout, check_partition, fewer_ipus
from vipu.jobs.models import MlpModel, Strict, TransformerModel
from vipu.partition.rules import is_power_of_two
from vipu.scheduler.workload import Workload, register
from vipu.spec_numbers import Count, Number, Whole
from vipu.validation import MAX_SPEC_BYTES, describe

JobCheck = Callable[[dict, str], object]
Model = Annotated[Union[MlpModel, TransformerModel, ConvNetModel], Field(discriminator="kind")]


class TrainWorkload(Workload):
    """A training run: `steps` optimiser steps of `model` laid out as `layout`; with execute: false only modelled.

    Executed on the emulated IPUs (vipu/jobs/train), or modelled: vipu/jobs/train/modelled.py."""

    kind: Literal["train"] = "train"
    model: Model
    layout: Layout = Layout()
    optimizer: Literal["sgd", "adam"] = Field("adam", description="sgd: momentum SGD; adam: Adam/LAMB")
    master_weights: bool = Field(True, description="fp16 models keep an fp32 master copy of the weights; false:"
                                 " fp16 weights updated with stochastic rounding (Graphcore's usual choice)")
    steps: Count = Field(1, le=1 << 30)
    learning_rate: Number = Field(1e-3, gt=0, le=1e3)
    seed: Whole = Field(0, ge=0, le=2**63 - 1)
    synthetic_data: bool | None = Field(None, description=(
        "true: samples are drawn on the IPUs, no host I/O (Graphcore's applications' synthetic-data mode, and how"
        " the emulator runs every executed model); false: every micro-batch's inputs come from the hosts. Default:"
        " false for resnet50 and for transformers with a vocab, true otherwise"))
    execute: bool = Field(True, description=(
        "false: a modelled run, for a spec too large to compute here: it computes nothing and holds its partition"
        " for steps x the planner's predicted step time (x the controller's --modelled-time-scale), reporting the"
        " prediction as its steps (no loss); admitted when the layout fits, even where the emulator could not"
        " execute it"))

    @field_validator("layout")
    @classmethod
    def _fits_model(cls, layout: Layout, info: ValidationInfo) -> Layout:
        model = info.data.get("model")
        if model is None:
            return layout  # the model failed its own validation; that error is reported
        problem = model.shard_problem(layout.t)
        if problem:
            raise PydanticCustomError("layout_t", problem)
        if layout.t2 > 1:
            problem = model.shard2_problem(layout.t2)
            if problem:
                raise PydanticCustomError("layout_t2", problem)
        if layout.p > model.units:
            raise PydanticCustomError(
                "layout_p", f"p is {layout.p} but the {model.kind} model has {model.units} layers to split"
                " between pipeline stages; use p <= {units}", {"units": model.units})
        counts = layout.layers_per_stage
        if counts is not None and sum(counts) != model.units:
            raise PydanticCustomError(
                "layout_layers_per_stage", f"layers_per_stage {list(counts)} adds up to {sum(counts)} but the"
                f" {model.kind} model has {model.units} layers; make the counts add up to {model.units}")
        if layout.r % model.norm_replicas:
            divisors = ", ".join(str(d) for d in range(1, layout.r + 1) if layout.r % d == 0)
            # r is a power of two: only a power of two has one for a multiple
            other = (f", or an r that is a multiple of {model.norm_replicas}" if is_power_of_two(model.norm_replicas)
                     else f" (r is a power of two, so no r is a multiple of {model.norm_replicas})")
            raise PydanticCustomError(
                "layout_r", f"r is {layout.r} but the model's batch_norm_replicas is {model.norm_replicas}: replicas"
                " pool their batch-norm statistics in groups of that size, so it must divide r; give"
                f" batch_norm_replicas one of {divisors}{other}")
        return layout

    def fewer_ipus(self, limit: int) -> str:
        return fewer_ipus(self.layout, limit)

    @property
    def synthetic(self) -> bool:
        """Whether the samples are drawn on the IPUs (no host I/O): synthetic_data, or its default for the model."""
        if self.synthetic_data is not None:
            return self.synthetic_data
        return not (self.model.kind == "resnet50" or getattr(self.model, "vocab", None))

    @property
    def global_batch(self) -> int:
        """Samples per optimiser step: micro_batch x micro_batches x r."""
        return self.layout.global_batch

    @property
    def modelled(self) -> bool:
        return not self.execute


register(TrainWorkload)  # job specs take `workload: {kind: train, ...}` wherever this module is loaded


class PlanSpec(Strict):
    """A job spec with a train workload, and one key of its own: `pod`, for planning only (`vipu submit` refuses
    a spec that has it: a job runs on its controller's Pod; `vipu plan --pod` overrides it)."""

    ipus: Whole = Field(description="the partition size: t x p x r")
    pod: str | None = Field(None, description="a preset name or a Pod file; default: smallest preset holding ipus")
    workload: TrainWorkload


def default_pod(ipus: int) -> str:
    """The smallest preset with at least `ipus` IPUs (the largest if none is, or `ipus` is not positive: check_size
    then says the sizes any preset takes)."""
    return (preset_with(ipus) if ipus >= 1 else None) or PRESETS[-1]


def plan_spec(data: object, source: str = "plan spec", check_job: JobCheck | None = None,
              pod: PodConfig | None = None) -> tuple[PlanSpec, PodConfig]:
    """Validate a parsed spec (a job spec with a train workload) and resolve its Pod: `pod` (`vipu plan --pod`)
    if given, else the spec's own (walk33: the spec's was checked first, so --pod could not plan a spec too big
    for it). `check_job(fields, source)`,
    given, first checks every field but `pod` as a submitted job's (the scheduler's JobSpec: this package does not
    know its other fields), so a spec that plans is one that submits."""
    if not isinstance(data, dict):
        raise InvalidArgument(f"invalid {source}: expected a mapping such as {{ipus: 16, workload: {{kind: train,"
                              f" ...}}}}, got {type(data).__name__}")
    fields = {key: data[key] for key in ("ipus", "pod", "workload") if key in data}
    workload = fields.get("workload")
    if isinstance(workload, dict) and workload.get("kind", "train") != "train":
        raise InvalidArgument(f"invalid {source}: workload.kind is {workload.get('kind')!r}; only train workloads"
                              " can be planned")
    if check_job is not None:
        check_job({key: value for key, value in data.items() if key != "pod"}, source)
    try:
        spec = PlanSpec.model_validate(fields)
    except ValidationError as e:
        raise InvalidArgument(describe(e, source, data=fields)) from None
    if pod is None:
        pod = load_pod(spec.pod, f"{source}: pod") if spec.pod else load_pod(default_pod(spec.ipus))
    check_spec_partition(spec, pod, source)
    return spec, pod


def check_spec_partition(spec: PlanSpec, pod: PodConfig, source: str = "plan spec") -> None:
    """check_partition of the spec's layout and ipus on `pod`, its refusal named as the spec's other errors are
    (`invalid spec file X: ...`)."""
    try:
        check_partition(spec.workload.layout, spec.ipus, pod)
    except InvalidArgument as e:
        raise InvalidArgument(f"invalid {source}: {e.message}") from None


def load_plan_spec(path: str | Path, check_job: JobCheck | None = None,
                   pod: PodConfig | None = None) -> tuple[PlanSpec, PodConfig]:
    """A plan spec from a YAML or JSON file (check_job, pod: see plan_spec)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"spec file {str(path)!r} does not exist or is not a file; give the path of a job spec")
    raw = path.read_bytes()
    if len(raw) > MAX_SPEC_BYTES:
        raise InvalidArgument(f"spec file {path} is {len(raw)} bytes; a job spec may be at most {MAX_SPEC_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArgument(f"invalid spec file {path}: not UTF-8 text (bad byte at offset {e.start}); give a"
                              " YAML or JSON file") from None
    data = read_document(text, f"spec file {path}", as_json=path.suffix == ".json" or None)
    return plan_spec(data, f"spec file {path}", check_job, pod)
