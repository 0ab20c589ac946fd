"""One IPU's reading from its machine actor's stats, as `vipu list ipus` and the Prometheus collector both show it."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.hardware.power import power_watts, temperatures_celsius
from vipu.partition.ipu_status import IpuStatus, MachineStatus
from vipu.server import convert
from vipu.workers.bsp import ComputeSet, IpuWork, Step
from vipu.workers.machine import Machine
from vipu.workers.telemetry import ipu_reading

STATS = {"per_ipu": {5: {"utilisation": 0.75, "sram_used_bytes": 1234}}}  # keyed as Machine.stats() keys it


def status(state: str, partition: str | None = "p") -> IpuStatus:
    return IpuStatus(ipu=5, machine=1, index=1, ild=0, agent=None, state=state, partition=partition)


@pytest.mark.parametrize("stats, working, want", [
    (STATS, True, (0.75, 1234)),
    (STATS, False, (0.0, 1234)),  # failed, or in no partition: no work, whatever its machine last said
    (None, True, (0.0, 0)),  # no actor yet: idle
    ({"per_ipu": {}}, True, (0.0, 0)),
])
def test_ipu_reading(stats, working, want):
    assert ipu_reading(stats, 5, working) == want


def test_the_reading_is_what_the_machine_reports(pod):
    """From a real Machine's stats, not a hand-written dict: the two once disagreed on the type of the IPU key, and
    every IPU read idle while a job trained on it."""
    machine = Machine(pod, 1)  # IPUs 4..7
    machine.put_tensor(5, "w", np.zeros(1000, np.float32))
    times = machine.run_step(Step(compute_sets=[ComputeSet(ipus={5: IpuWork(flops=236_800), 6: IpuWork()})]))
    stats = machine.stats()
    utilisation, sram = ipu_reading(stats, 5, working=True)
    assert utilisation == pytest.approx(times.utilisation[5]) and 0 < utilisation < 1
    assert sram == stats["per_ipu"][5]["sram_used_bytes"] >= 4000
    assert ipu_reading(stats, 6, working=True) == (0.0, 0)  # took part in the step without computing
    assert power_watts(utilisation) > power_watts(0.0)


def test_list_ipus_shows_a_failed_or_unallocated_ipu_idle_as_the_metrics_do():
    assert convert.ipu(status("failed"), STATS).utilization == 0.0
    assert convert.ipu(status("allocated"), STATS).utilization == 0.75
    # the job has ended and its partition is gone: its last step's utilisation is still in the machine's stats
    assert convert.ipu(status("idle", partition=None), STATS).utilization == 0.0
    assert convert.ipu(status("draining", partition="p"), STATS).utilization == 0.75  # its job still runs


def test_a_machine_reads_its_working_ipus_utilisation_as_its_mean():
    """ListMachines' utilisation: the mean over its IPUs of what ListIpus gives each (an IPU in no partition, or
    failed, reads 0 whatever its machine last reported)."""
    status = MachineStatus(31, 1, "ag031", "ag031", 4, 0, 3, 0, 0, 1, ("racks",), (124, 125, 126))
    stats = {"per_ipu": {i: {"utilisation": 0.5} for i in range(124, 128)}}
    shown = convert.machine(status, stats)
    assert shown.utilization == pytest.approx(1.5 / 4) and list(shown.partitions) == ["racks"]
    assert convert.machine(status, None).utilization == 0.0
