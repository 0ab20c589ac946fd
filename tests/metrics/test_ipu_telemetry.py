"""The per-IPU series of a training job on real machine actors, read mid-run as a scrape reads them: the IPUs the
job trains on show its tensors in SRAM, a non-zero utilisation and power above idle; the IPUs it does not use stay
idle; the SRAM is free again once the job ends."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vipu.hardware.pod_files import load_pod
from vipu.hardware.power import IDLE_W
from vipu.jobs.train_spec import TrainWorkload
from vipu.partition.ipu_status import IpuStatus

ROOT = Path(__file__).resolve().parents[2]
POD = load_pod("bow-pod64")
JOB_IPUS = [0, 1, 2, 3]  # examples/tiny_tp.yaml: t=4 on machine 0


@pytest.fixture
def fleet(ray_session):
    from vipu.workers.fleet import Fleet
    from vipu.workers.pool import MachinePool

    fleet = Fleet(POD, on_lost=lambda machines: None)  # the controller's edge to the actors; only its stats() is used here
    fleet.pool = MachinePool(POD)
    yield fleet
    fleet.pool.shutdown()


def per_ipu_series(fleet, running: bool = True) -> dict[str, dict[int, float]]:
    """One scrape of the collector's per-IPU families for machines 0 and 1: {metric: {ipu: value}}; `running`: the
    job's partition is still there."""
    from vipu.metrics.collector import StateCollector

    busy = JOB_IPUS if running else []
    statuses = [IpuStatus(ipu=i, machine=i // 4, index=i % 4, ild=0, agent=f"ag0{i // 4}",
                          state="allocated" if i in busy else "idle", partition="slurm_1" if i in busy else None)
                for i in range(8)]
    families = StateCollector(SimpleNamespace(machine_stats=fleet.stats)).machines(POD, statuses)
    wanted = {"vipu_ipu_utilization_ratio", "vipu_ipu_memory_used_bytes", "vipu_ipu_power_watts"}
    return {f.name: {int(s.labels["ipu"]): s.value for s in f.samples} for f in families if f.name in wanted}


def test_a_training_job_shows_on_its_ipus_while_it_runs(fleet):
    from vipu.fabric.ray_transport import RayTransport
    from vipu.jobs.train import run_training

    spec = yaml.safe_load((ROOT / "examples/tiny_tp.yaml").read_text())["workload"]
    workload = TrainWorkload.model_validate({**spec, "steps": 2})
    fleet.pool.actors_for([0, 1])  # machine 1 has an actor but no work: it must read idle
    scrapes = []
    result = run_training(workload, POD, 0, lambda group: RayTransport.for_group(fleet.pool, group),
                          on_step=lambda report: scrapes.append((report, per_ipu_series(fleet))))
    assert result.steps_run == 2 and len(scrapes) == 2
    for report, series in scrapes:
        for ipu in JOB_IPUS:
            mine = report.ipus[ipu]
            # its weights, gradients and Adam state stay on the IPU from step to step
            assert series["vipu_ipu_memory_used_bytes"][ipu] >= mine.memory_bytes - mine.activation_bytes > 0
            # the step's busy share, as the job's own report gives it (tile cycles round it a little)
            assert series["vipu_ipu_utilization_ratio"][ipu] == pytest.approx(mine.utilisation, rel=1e-3)
            assert series["vipu_ipu_utilization_ratio"][ipu] > 0
            assert series["vipu_ipu_power_watts"][ipu] > IDLE_W
        for ipu in range(4, 8):
            assert series["vipu_ipu_utilization_ratio"][ipu] == 0.0 and series["vipu_ipu_memory_used_bytes"][ipu] == 0
            assert series["vipu_ipu_power_watts"][ipu] == IDLE_W
    after = per_ipu_series(fleet)
    assert all(after["vipu_ipu_memory_used_bytes"][ipu] == 0 for ipu in JOB_IPUS)  # the job freed its tensors
    gone = per_ipu_series(fleet, running=False)  # and once its partition is removed, its IPUs read idle
    assert all(gone["vipu_ipu_utilization_ratio"][ipu] == 0.0 for ipu in JOB_IPUS)
    assert all(gone["vipu_ipu_power_watts"][ipu] == IDLE_W for ipu in JOB_IPUS)
