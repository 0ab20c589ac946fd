"""Training workloads and their planner: will a t x p x r layout of a model fit the IPUs' SRAM, and how fast will
a step run?

Pure domain (no I/O but reading a spec file in train_spec.py and command.py): models.py and convnet.py (sizes and FLOPs of
an MLP, a transformer stack and a ResNet-50-shaped network), blocks.py (a pipeline stage's blocks and what each
holds on an IPU), layout.py (t, p, r, micro-batches and memory options), train_spec.py (TrainWorkload, the job spec's
`train` workload, and plan files), memory_estimate.py and timing.py (the two halves of a plan), collective_time.py
(alpha-beta collectives on the Pod's links), planner.py (plan() -> Plan), plan_report.py (Plan.table(); units.py:
bytes in KiB, MiB, GiB, as `vipu logs` prints them), suggest.py (layouts that fit; check_fits() for submit),
command.py (plan_file(): what `vipu plan SPEC` prints, and whether it fits). Every figure not in the Pod preset is a
stated assumption (assumptions.py).
"""

import importlib

# Each name is imported on first use, not with the package: the controller validates a `train` workload with
# train_spec.py at every start, and the planner behind command.py and suggest.py brings numpy and the fabric's cost
# model (a third of the controller's start-up) into a process that may never plan a job.
_HOMES = {
    "Assumptions": "assumptions", "main_plan": "command", "ConvNetModel": "convnet", "Layout": "layout",
    "bubble_fraction": "layout", "check_partition": "layout", "MlpModel": "models", "TransformerModel": "models",
    "Plan": "planner", "plan": "planner", "PlanSpec": "train_spec", "TrainWorkload": "train_spec", "load_plan_spec": "train_spec",
    "plan_spec": "train_spec", "check_fits": "suggest",
}  # not suggest(): once vipu.jobs.suggest is imported, the package's `suggest` is that module (import it from there)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


__all__ = [
    "Assumptions", "ConvNetModel", "Layout", "MlpModel", "Plan", "PlanSpec", "TrainWorkload", "TransformerModel",
    "bubble_fraction", "check_fits", "check_partition", "load_plan_spec", "main_plan", "plan", "plan_spec",
]
