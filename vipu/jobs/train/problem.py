"""Which training workloads the numpy emulation executes: what is trained (weights, samples, loss) is the SDK's
(vipu/sdk/nn/synthetic.py), shared with users' programs; what one step may cost here is the engine's.
"""

from __future__ import annotations

from vipu.errors import InvalidArgument

# what one step of the numpy emulation may cost here: a job's steps run in seconds on a laptop core
MAX_PARAMS = 20_000_000
MAX_STEP_FLOPS = 2e10


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
    if lay.layers_per_stage is not None:
        problems.append("workload.layout.layers_per_stage is set: executed pipelines split the layers evenly, so"
                        " drop it")
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
