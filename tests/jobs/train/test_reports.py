"""What a run reports per step (emulated time and its split, link traffic, per-IPU utilisation and memory) and how
it behaves as a job: weights on the IPUs while it runs, freed after, stoppable between steps."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.jobs.train import run_training
from tests.jobs.train.builders import KeepingTransport, mlp, pod, run, transformer, workload

KINDS = ("tensor_parallel", "pipeline", "data_parallel")


@pytest.mark.parametrize("layout, moving", [
    (dict(t=1, p=1, r=1), set()),
    (dict(r=4), {"data_parallel"}),
    (dict(p=4, micro_batches=4), {"pipeline"}),
    (dict(t=4), {"tensor_parallel"}),
    (dict(t=2, p=2, r=2, micro_batches=2), set(KINDS)),
])
def test_link_bytes_and_times_where_collectives_ran(layout, moving):
    report = run(workload(mlp(), "sgd", steps=2, **layout)).reports[-1]
    assert report.emulated_step_s > 0 and report.compute_s > 0
    assert {kind for kind in KINDS if report.bytes_per_kind[kind] > 0} == moving
    assert (report.bytes_per_link_type.get("ipu_link", 0) > 0) == bool(moving)
    assert (report.collectives > 0) == bool(moving)
    assert (report.tensor_parallel_s > 0) == ("tensor_parallel" in moving)
    assert (report.pipeline_send_s > 0) == ("pipeline" in moving)
    assert (report.data_parallel_s > 0) == ("data_parallel" in moving)
    assert (report.sync_s > 0) == bool(moving)  # every collective starts with a sync across the partition
    parts = report.compute_s + report.tensor_parallel_s + report.pipeline_send_s + report.sync_s + report.bubble_s
    assert parts + report.data_parallel_s == pytest.approx(report.emulated_step_s)
    assert report.comm_s == pytest.approx(report.tensor_parallel_s + report.pipeline_send_s + report.data_parallel_s)
    assert (report.bubble_fraction > 0) == (layout.get("p", 1) > 1)
    assert sorted(report.ipus) == list(range(layout.get("t", 1) * layout.get("p", 1) * layout.get("r", 1)))
    for ipu in report.ipus.values():
        assert 0 < ipu.utilisation <= 1 and ipu.compute_s > 0 and ipu.memory_bytes > ipu.activation_bytes > 0


def test_result_compares_emulation_with_the_planner():
    w = workload(transformer(), "adam", steps=2, t=2, p=2, micro_batches=2)
    result = run(w)
    assert result.steps_run == 2 and not result.stopped
    assert result.predicted_step_s > 0 and result.emulated_step_s > 0
    assert result.throughput_samples_per_s == pytest.approx(w.global_batch / result.emulated_step_s)
    assert set(result.predicted_parts) == set(result.emulated_parts)
    assert sum(result.emulated_parts.values()) == pytest.approx(result.emulated_step_s)
    assert result.bytes_per_link_type["ipu_link"] == sum(r.bytes_per_link_type["ipu_link"] for r in result.reports)


def test_1f1b_stashes_fewer_activations_than_gpipe():
    def stage0_activations(schedule):
        w = workload(mlp(), "sgd", steps=1, p=4, micro_batches=8, schedule=schedule)
        return run(w).reports[0].ipus[0].activation_bytes

    assert stage0_activations("1f1b") * 2 == stage0_activations("gpipe")  # p = 4 in flight instead of m = 8


def test_weights_live_on_the_partition_ipus_and_are_freed_at_the_end():
    transport = KeepingTransport()
    w = workload(mlp(), "adam", steps=3, t=2, p=2)
    seen = []

    def on_step(report):
        seen.append({ipu for ipu, name in transport.tensors if name == "params"})

    result = run(w, first_ipu=4, transport_factory=lambda group: transport, on_step=on_step)
    assert seen == [{4, 5, 6, 7}] * 3 and result.steps_run == 3
    assert {ipu for ipu, _ in transport.seen} == {4, 5, 6, 7}
    assert {"params", "grads", "opt.m", "opt.v", "tp", "pp"} <= {name for _, name in transport.seen}
    assert transport.tensors == {}


def test_should_stop_ends_the_run_between_steps():
    calls = []
    result = run(workload(mlp(), "sgd", steps=10, r=2), should_stop=lambda: len(calls) >= 3,
                 on_step=calls.append)
    assert result.stopped and result.steps_run == 3 and result.steps_requested == 10
    assert [r.step for r in result.reports] == [0, 1, 2]


def test_a_failing_step_still_frees_the_ipus():
    transport = KeepingTransport()

    def boom(report):
        raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        run(workload(mlp(), "sgd", r=2), transport_factory=lambda group: transport, on_step=boom)
    assert transport.tensors == {}


@pytest.mark.parametrize("model, problem", [
    (transformer(vocab=50), "vocab"),
    ({"kind": "resnet50", "dtype": "fp32"}, "only mlp and transformer"),
    (mlp(hidden=4096, inputs=4096, layers=4), "too big"),
])
def test_workloads_the_emulator_cannot_execute_are_refused(model, problem):
    w = workload(model, "sgd", micro_batch=64)
    with pytest.raises(InvalidArgument, match=problem):
        run_training(w, pod(), 0, transport_factory=lambda group: pytest.fail("no transport for a refused job"))


def test_every_reason_the_emulator_cannot_execute_a_workload_is_named_at_once():
    w = workload(transformer(vocab=50, hidden=4096, heads=16), "sgd", micro_batch=64)
    with pytest.raises(InvalidArgument) as e:
        run_training(w, pod(), 0, transport_factory=lambda group: pytest.fail("no transport for a refused job"))
    assert e.value.message.startswith("workload.model.vocab is set")
    assert "so drop vocab; and the workload is too big to execute in the emulator" in e.value.message
    assert e.value.message.endswith("or plan it with `vipu plan` (a plan has no such limit)")


def test_a_partition_must_be_an_aligned_block():
    with pytest.raises(InvalidArgument, match="aligned"):
        run(workload(mlp(), "sgd", r=4), first_ipu=2)


def test_fp16_models_compute_in_fp32_but_are_priced_at_fp16_bytes():
    layout = dict(t=2, p=2, r=2, micro_batches=2)
    fp32 = run(workload(mlp(), "adam", steps=2, **layout))
    fp16 = run(workload(mlp(dtype="fp16"), "adam", steps=2, **layout))
    assert fp16.losses == fp32.losses
    for kind in KINDS:
        assert fp16.reports[0].bytes_per_kind[kind] * 2 == fp32.reports[0].bytes_per_kind[kind]
    assert fp16.reports[0].comm_s < fp32.reports[0].comm_s
