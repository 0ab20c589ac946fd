"""The example programs (examples/tiny_*.py: users' programs on the public SDK) train exactly as the built-in
`train` workload trains examples/tiny_*.yaml: the same loss and emulated step time, step by step, and the same
parts of the step. Here against a session served in-process (tests/sdk/in_process.py); tests/sdk/test_examples_e2e.py
runs them as jobs on a controller."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
import yaml

from vipu.hardware.pod_files import load_pod
from vipu.jobs.train import run_training
from vipu.jobs.train_spec import TrainWorkload
import vipu.sdk as ipu
from tests.jobs.sessions.builders import session
from tests.sdk.in_process import served

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POD = load_pod("bow-pod64")
STEPS = 4
# what must be equal, to 1e-9 relative: the loss and the emulated step, and the parts of the step
SAME = ("loss", "emulated_step_s", "compute_s", "tensor_parallel_s", "pipeline_send_s", "data_parallel_s", "sync_s",
        "bubble_s", "bubble_fraction")


def example(name: str):
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))


def builtin(name: str, steps: int):
    workload = TrainWorkload.model_validate(yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())["workload"])
    return run_training(workload, POD, steps=steps).reports


@pytest.mark.parametrize("name, per_replica, parallel", [("tiny_dp", 1, "data_parallel"), ("tiny_pp", 4, "pipeline"),
                                                       ("tiny_tp", 4, "tensor_parallel")])
def test_the_program_equals_the_builtin_workload_step_by_step(name, per_replica, parallel):
    module, loop = example(name), example("tiny_training")
    with served(session(job_id=1, pod=POD)):
        with ipu.attach(ipus_per_replica=per_replica) as device:
            program = loop.train(device, module.TRAINING, getattr(module, parallel)(device), steps=STEPS)
    for mine, theirs in zip(program, builtin(name, STEPS), strict=True):
        for field in SAME:
            # abs: a part that is 0 in one is a rounding error's size in the other (a share of 1e-16)
            assert mine[field] == pytest.approx(getattr(theirs, field), rel=1e-9, abs=1e-15), (name, field)
        moved = {link: n for link, n in theirs.bytes_per_link_type.items() if n}
        assert {link: n for link, n in mine["bytes_per_link_type"].items() if n} == moved
