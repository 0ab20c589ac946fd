"""Training workloads and their planner: will a t x p x r layout of a model fit the IPUs' SRAM, and how fast will
a step run?

Pure domain (no I/O but reading a spec file in spec.py and command.py): models.py and convnet.py (sizes, FLOPs and
activation bytes of an MLP, a transformer stack and a ResNet-50-shaped network), layout.py (t, p, r, micro-batches
and memory options), spec.py (TrainWorkload, the job spec's `train` workload, and plan files), memory.py and
timing.py (the two halves of a plan), comms.py (alpha-beta collectives on the Pod's links), planner.py (plan() ->
Plan), report.py (Plan.table()), suggest.py (layouts that fit; check_fits() for submit), command.py (plan_file():
what `vipu plan SPEC` prints, and whether it fits). Every figure not in the Pod preset is a stated assumption
(assumptions.py).
"""

from vipu.jobs.assumptions import Assumptions
from vipu.jobs.command import main_plan
from vipu.jobs.convnet import ConvNetModel
from vipu.jobs.layout import Layout, bubble_fraction, check_partition
from vipu.jobs.models import MlpModel, TransformerModel
from vipu.jobs.planner import Plan, plan
from vipu.jobs.spec import PlanSpec, TrainWorkload, load_plan_spec, plan_spec
from vipu.jobs.suggest import check_fits, suggest

__all__ = [
    "Assumptions", "ConvNetModel", "Layout", "MlpModel", "Plan", "PlanSpec", "TrainWorkload", "TransformerModel",
    "bubble_fraction", "check_fits", "check_partition", "load_plan_spec", "main_plan", "plan", "plan_spec",
    "suggest",
]
