"""A controller without machine actors (vipu-server --ray off) runs training on the in-process machines the actors
wrap, so a run is held to the same tile SRAM and Streaming Memory as on the actors, with the same refusal."""

from __future__ import annotations

import pytest

from tests.jobs.train.builders import mlp, pod, run, workload
from vipu.errors import ResourceExhausted
from vipu.jobs.train import run_training
from vipu.workers.fleet import Fleet


def small_pod(sram_per_tile: int):
    big = pod()
    return big.model_copy(update={"ipu": big.ipu.model_copy(update={"sram_per_tile_bytes": sram_per_tile})})


def test_a_run_over_sram_is_refused_without_actors_as_on_them():
    tiny = small_pod(64)  # 92 KiB an IPU: the 4-layer MLP's fp32 weights do not fit
    fleet = Fleet(tiny, on_lost=lambda machines: None, mode="off")
    w = workload(mlp(hidden=256), steps=1)
    with pytest.raises(ResourceExhausted, match=r"out of memory on IPU 0 \(IPU 0 of machine 0\): tensor 'params'"):
        run_training(w, tiny, 0, transport_factory=lambda group: fleet.machine_transport([0]))


def test_a_run_that_fits_trains_the_same_on_the_machines():
    fleet = Fleet(pod(), on_lost=lambda machines: None, mode="off")
    w = workload(mlp(), steps=2, t=2, p=2, micro_batches=2)
    on_machines = run(w, transport_factory=lambda group: fleet.machine_transport([0]))
    assert on_machines.losses == run(w).losses
    machine, _ = fleet._machines[0]
    assert all(memory.used_bytes == 0 for memory in machine.memories)  # every tensor freed when the run ended


def test_micro_batches_run_one_by_one_where_their_stacked_exchange_buffers_would_not_fit(monkeypatch):
    """micro_batches.stack_fits: stacked, a stage's exchange buffers hold its 16 micro-batches; at 60 bytes a tile
    they do not fit where one micro-batch's do, so the run goes one by one, with the same losses."""
    from vipu.jobs.train import parallel

    tight = small_pod(60)
    w = workload(mlp(hidden=64), steps=2, t=2, p=2, micro_batch=8, micro_batches=16)
    fleet = Fleet(tight, on_lost=lambda machines: None, mode="off")
    on_machines = run_training(w, tight, 0, transport_factory=lambda group: fleet.machine_transport([0]))
    assert on_machines.losses == run(w).losses
    machine, _ = fleet._machines[0]
    assert all(memory.used_bytes == 0 for memory in machine.memories)  # the buffers tried were freed too
    monkeypatch.setattr(parallel, "stack_fits", lambda *args: True)
    with pytest.raises(ResourceExhausted, match="out of memory on IPU"):
        run_training(w, tight, 0, transport_factory=lambda group: fleet.machine_transport([0]))
