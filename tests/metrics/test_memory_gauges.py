"""The memory gauges of a running training job read what the job itself reports (`vipu logs`' SRAM PEAK and
STREAMING), to the byte, on machine actors and with `--ray off` alike: per IPU, vipu_ipu_memory_used_bytes is the
step's SRAM peak; per machine, vipu_machine_streaming_memory_used_bytes is its IPUs' Streaming Memory (phased: the
weights, gradient accumulators and optimiser state, with RTS the replica's shard, and the stashed block inputs).
The machines' own buffers of the emulation (fp32, whole stages, collective scratch) are not what the Pod holds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vipu.hardware.pod_files import load_pod
from vipu.jobs.train_spec import TrainWorkload
from vipu.partition.ipu_status import IpuStatus

ROOT = Path(__file__).resolve().parents[2]
POD = load_pod("bow-pod16")
PHASED_RTS = {"kind": "train", "model": {"kind": "mlp", "layers": 4, "hidden": 64, "inputs": 32, "outputs": 10},
              "layout": {"t": 1, "p": 2, "r": 2, "micro_batch": 8, "micro_batches": 4, "rts": True, "phased": True},
              "optimizer": "adam"}
JOBS = {"phased-rts": PHASED_RTS, "tiny_tp": yaml.safe_load((ROOT / "examples/tiny_tp.yaml").read_text())["workload"]}


def gauges(fleet) -> tuple[dict[int, float], float]:
    """One scrape: ({IPU of machine 0: SRAM in use}, machine 0's Streaming Memory in use)."""
    from vipu.metrics.collector import StateCollector

    statuses = [IpuStatus(ipu=i, machine=0, index=i, ild=0, agent="ag00", state="allocated", partition="slurm_1")
                for i in range(4)]
    families = {f.name: f for f in StateCollector(SimpleNamespace(machine_stats=fleet.stats)).machines(POD, statuses)}
    sram = {int(s.labels["ipu"]): s.value for s in families["vipu_ipu_memory_used_bytes"].samples}
    [streaming] = [s.value for s in families["vipu_machine_streaming_memory_used_bytes"].samples
                   if s.labels["machine"] == "0"]
    return sram, streaming


@pytest.fixture
def on_actors(ray_session):
    """A Fleet whose machines are actors, and the transport a controller gives a run on them (scoped names)."""
    from vipu.fabric.ray_transport import RayTransport
    from vipu.jobs.train.data_path import Scoped
    from vipu.workers.fleet import Fleet
    from vipu.workers.pool import MachinePool

    fleet = Fleet(POD, on_lost=lambda machines: None)  # only its stats() is used
    fleet.pool = MachinePool(POD)
    yield fleet, lambda steps: lambda group: Scoped(RayTransport.for_group(fleet.pool, group), "job1.run1/")
    fleet.pool.shutdown()


@pytest.fixture
def without_actors():
    """What Fleet.stats() reads with --ray off: the running jobs' step reports; the runs on the in-process
    machines a --ray off Fleet gives them."""
    from vipu.jobs.train.stats_without_actors import machine_stats
    from vipu.workers.fleet import Fleet

    off = Fleet(POD, on_lost=lambda machines: None, mode="off")
    running: list[list] = []
    fleet = SimpleNamespace(stats=lambda: machine_stats(running, {}, POD.machine.ipus))
    return fleet, lambda steps: running.append(steps) or (lambda group: off.machine_transport([0]))


@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize("mode", ["on_actors", "without_actors"])
def test_the_memory_gauges_are_what_the_job_reports(request, mode, job):
    from vipu.jobs.train import run_training

    fleet, transport_for = request.getfixturevalue(mode)
    workload = TrainWorkload.model_validate({**JOBS[job], "steps": 3})
    steps, scrapes = [], []
    result = run_training(workload, POD, 0, transport_for(steps),
                          on_step=lambda report: (steps.append(report), scrapes.append(gauges(fleet))))
    assert len(scrapes) == 3
    usage = {u.ipu: u for u in result.ipu_usage}  # what `vipu logs` prints
    assert sorted(usage) == [0, 1, 2, 3]
    for sram, streaming in scrapes:
        assert sram == {ipu: u.sram_peak_bytes for ipu, u in usage.items()}
        assert streaming == sum(u.streaming_peak_bytes for u in usage.values())
    if job == "phased-rts":  # 11,082 parameters (fp16), each replica's IPUs keeping a shard of each: Adam's m, v and
        # master weights (12 bytes), the weights and gradient accumulators (4); and the stashed block inputs
        assert streaming > 16 * 11_082
    if mode == "on_actors":
        sram, streaming = gauges(fleet)
        assert set(sram.values()) == {0.0} and streaming == 0  # the job has freed everything, its holds too
