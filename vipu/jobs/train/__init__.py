"""Executing a training workload on the emulated machines: real numpy training split over IPUs as the layout says.

The proof that the parallelism is real: the loss curve of the t x p x r execution equals single-device training of
the same model (reference.py) within fp32 tolerance, while every value that passes between IPUs crosses the fabric
(vipu.fabric collectives on a LocalTransport or on the machine actors), and each step is timed in emulated seconds
on the Pod's figures, beside the planner's prediction.

The model itself is the SDK's (vipu/sdk/nn: weights, samples and loss from the seed, numpy kernels, the cut into
stages, blocks and shards, a stage's forward and backward on its shards, GPipe and 1F1B orders, the optimisers),
shared with users' programs so that one copy of it trains both. Pure domain here: problem.py (what the emulation
executes), reference.py (single-device training), pipeline_schedule.py (the pipeline's timeline), work.py (one
operation's BSP compute sets and collectives; StageGroup, the engine's shards), recompute.py. Edges: poprun.py (the
environment each poprun instance sees, and which replicas it gives the instance), data_path.py (the collectives on
the transport), parallel.py (ParallelTrainer: one optimiser step; step_costs.py: what it cost and held, its report;
holdings.py: what each IPU holds during it; run_ahead.py: steps that run ahead of the machine actors), runner.py
(run_training, the entry point), results.py (StepReport, TrainingResult).
"""

import importlib

# imported on first use, as vipu.jobs does: the controller reads poprun.py at start, and the emulator brings numpy
_HOMES = {"IpuReport": "results", "StepReport": "results", "TrainingResult": "results", "run_training": "runner",
          "train_reference": "reference"}


def __getattr__(name: str):
    if name not in _HOMES:  # a submodule (`from vipu.jobs.train import optim`) is then imported by the import system
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


__all__ = ["IpuReport", "StepReport", "TrainingResult", "run_training", "train_reference"]
