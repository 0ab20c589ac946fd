"""replica_batches.py: a data-parallel MLP's replicas run as one keep the numbers, times and memory of each replica
run alone, to the last bit."""

from __future__ import annotations

import pytest

from tests.jobs.train.builders import mlp, run, workload


@pytest.mark.parametrize("layers, r, micro_batches", [(4, 4, 2), (3, 2, 1), (5, 4, 3)])
def test_replicas_run_as_one_report_what_each_replica_alone_reports(layers, r, micro_batches, monkeypatch):
    from vipu.jobs.train import parallel

    w = workload(mlp(layers=layers), "adam", steps=3, r=r, micro_batches=micro_batches)
    as_one = run(w)
    monkeypatch.setattr(parallel, "batchable", lambda trainer: False)
    alone = run(w)
    assert as_one.losses == alone.losses
    for a, b in zip(as_one.reports, alone.reports, strict=True):
        assert a.model_dump(exclude={"wall_s"}) == b.model_dump(exclude={"wall_s"})
