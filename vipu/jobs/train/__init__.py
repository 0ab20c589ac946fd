"""Executing a training workload on the emulated machines: real numpy training split over IPUs as the layout says.

The proof that the parallelism is real: the loss curve of the t x p x r execution equals single-device training of
the same model (reference.py) within fp32 tolerance, while every value that passes between IPUs crosses the fabric
(vipu.fabric collectives on a LocalTransport or on the machine actors), and each step is timed in emulated seconds
on the Pod's figures, beside the planner's prediction.

Pure domain: problem.py (weights and synthetic data from the seed), kernels.py (numpy layers with hand-written
backward passes), optim.py (momentum SGD, Adam), reference.py (single-device training), sharding.py (layers to
stages, tensors to shards), schedule.py (GPipe and 1F1B, the pipeline's timeline), work.py (one operation's BSP
compute sets and collectives), mlp_stage.py and transformer_stage.py (a stage's forward and backward on its shards).
Edges: poprun.py (the environment each poprun instance sees, and which replicas it gives the instance), comm.py
(the collectives on the transport), parallel.py (ParallelTrainer: one optimiser step), runner.py (run_training,
the entry point), report.py (StepReport, TrainingResult).
"""

from vipu.jobs.train.reference import train_reference
from vipu.jobs.train.report import IpuReport, StepReport, TrainingResult
from vipu.jobs.train.runner import run_training

__all__ = ["IpuReport", "StepReport", "TrainingResult", "run_training", "train_reference"]
