"""Which training workloads the numpy emulation executes: what is trained (weights, samples, loss) is the SDK's
(vipu/sdk/nn/synthetic.py), shared with users' programs; what one step may cost here is the engine's.
"""

from __future__ import annotations

from vipu.errors import InvalidArgument
from vipu.sdk.nn.sharding import stage_layers

# what one step of the numpy emulation may cost here: a job's steps run in seconds on a laptop core
MAX_PARAMS = 20_000_000
MAX_STEP_FLOPS = 2e10


EXECUTED = (  # docs/job-spec.md prints it (docs/generate.py): what check_runnable() lets through, in a user's words
    "A train job is executed (computed step by step on the emulated IPUs, with a loss) when all of these hold;"
    " otherwise `vipu submit` refuses it with every reason that applies, and it can still be planned (`vipu plan`)"
    " or submitted modelled (`execute: false`: it computes nothing, only its fit counts):",
    "",
    "- the model is an mlp or a transformer (resnet50 is planned only);",
    "- a transformer has no `vocab` (executed inputs are vectors) and no `sequences_per_pack` (no packing);",
    "- `layers_per_stage` is not given, or is the even split (executed pipelines split the layers evenly: stage s of"
    " p gets layers [L s / p, L (s+1) / p));",
    "- `gradient_reduction` is fused (per_tensor and buffered are planned only);",
    "- `synthetic_data` is not false (executed models draw their samples on the IPUs);",
    f"- the model has at most {MAX_PARAMS:,} parameters and a step at most {MAX_STEP_FLOPS:,.0f} FLOPs"
    " (3 x forward FLOPs x global batch), so a job's steps run in seconds here.",
)


def even_split(units: int, p: int) -> tuple[int, ...]:
    """Layers per stage as an executed pipeline splits them (the SDK's stage_layers)."""
    return tuple(len(stage_layers(units, p, s)) for s in range(p))


def check_runnable(workload, max_params: int = MAX_PARAMS, max_step_flops: float = MAX_STEP_FLOPS) -> None:
    """Refuse workloads this numpy emulation cannot execute in reasonable time (they can still be planned), naming
    every reason at once: a user who fixes one should not meet the next only on the next submit."""
    model = workload.model
    if model.kind not in ("mlp", "transformer"):
        raise InvalidArgument(f"workload.model.kind is {model.kind!r}: only mlp and transformer models are executed;"
                              " plan it with `vipu plan` instead")
    problems = []
    if model.kind == "transformer" and model.vocab:
        problems.append("workload.model.vocab is set: executed transformers have no vocabulary (inputs are vectors),"
                        " so drop vocab")
    lay = workload.layout
    even = even_split(model.units, lay.p)
    if lay.layers_per_stage is not None and tuple(lay.layers_per_stage) != even:
        problems.append(f"workload.layout.layers_per_stage is {list(lay.layers_per_stage)}: executed pipelines"
                        f" split the layers evenly, so drop it (or give {list(even)})")
    if lay.gradient_reduction != "fused":
        problems.append(f"workload.layout.gradient_reduction is {lay.gradient_reduction}: executed replicas"
                        " allreduce each IPU's gradients as one fused buffer, so use fused")
    if workload.synthetic_data is False:  # resnet50 and vocab models, whose default it is, are refused already
        problems.append("workload.synthetic_data is false: executed models draw their samples on the IPUs, so"
                        " drop it")
    if model.sequences_per_sample != 1:
        problems.append("workload.model.sequences_per_pack is set: executed transformers take unpacked samples,"
                        " so drop it")
    flops = 3 * model.forward_flops() * workload.global_batch
    if model.params() > max_params or flops > max_step_flops:
        problems.append(f"the workload is too big to execute in the emulator ({model.params():,} parameters,"
                        f" {flops:.3g} FLOPs per step; at most {max_params:,} and {max_step_flops:.3g}), so shrink"
                        " the model or the batch")
    if problems:
        raise InvalidArgument(f"{'; and '.join(problems)} to run it here, or plan it with `vipu plan` (a plan has no"
                              " such limit)")
