"""Steps that run ahead of machines whose reads wait (run_ahead.py): the same losses and machine counters, no wait
a step, and what the machines computed or hold still checked bit for bit, every AHEAD_STEPS steps and at the end."""

from __future__ import annotations

import pytest

from tests.jobs.train.builders import mlp, run, workload
from tests.jobs.train.test_equivalence import Deferred
from vipu.fabric import LocalTransport
from vipu.jobs.train.data_path import DataPathMismatch
from vipu.jobs.train.run_ahead import AHEAD_STEPS


def test_a_data_parallel_pipeline_runs_ahead_with_the_same_losses_and_without_a_wait_a_step():
    w = workload(mlp(), "sgd", steps=AHEAD_STEPS + 2, p=2, r=2, micro_batches=2)
    deferred = Deferred()
    assert run(w, transport_factory=lambda group: deferred).losses == run(w).losses
    assert deferred.waited == ["grads"]  # once, when the trainer is made (micro_batches.stack_fits); no step waits
    local = LocalTransport()
    run(w, transport_factory=lambda group: local)
    assert deferred.records == local.records  # every collective recorded, once per micro-batch as in-process


@pytest.mark.parametrize("name", ["grads", "params", "opt.momentum"])
def test_values_the_machines_computed_or_hold_otherwise_fail_the_run_at_its_end(name):
    """A run shorter than AHEAD_STEPS checks only at its end: the gradients the machines summed, and the weights
    and state they end with."""
    w = workload(mlp(), "sgd", steps=2, r=2, micro_batches=2)
    with pytest.raises(DataPathMismatch, match=f"holds other values of '{name}' than the step continued with"):
        run(w, transport_factory=lambda group: Deferred(corrupt=name))
