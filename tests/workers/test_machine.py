"""One machine without Ray: IPU addressing, failed IPUs and IPU-Links refusing work, repair, steps and stats."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from vipu.workers.bsp import ComputeSet, IpuWork, Step
from vipu.workers.machine import Machine


@pytest.fixture
def machine(pod) -> Machine:
    return Machine(pod, 5)  # IPUs 20..23 of bow-pod64


def test_ipus_are_addressed_inside_the_machine_or_pod_wide(machine):
    machine.put_tensor(1, "w", np.arange(6.0), tiles=2)
    assert machine.get_tensor(21, "w").tolist() == [0, 1, 2, 3, 4, 5]
    machine.accumulate_slice(21, "w", 0, 2, np.ones(2))
    machine.set_slice(1, "w", 5, 6, np.array([50.0]))
    assert machine.get_slice(1, "w", 0, 6).tolist() == [1, 2, 2, 3, 4, 50]
    with pytest.raises(InvalidArgument, match="IPU 7 is not on machine 5; give 0..3 or its Pod-wide numbers 20..23"):
        machine.get_tensor(7, "w")


def test_out_of_memory_names_the_ipu_by_both_numbers(machine):
    with pytest.raises(ResourceExhausted, match=r"out of memory on IPU 22 \(IPU 2 of machine 5\): tensor 'big'"):
        machine.put_tensor(2, "big", np.zeros(700_000, np.uint8), tiles=1)


def test_a_failed_ipu_refuses_every_operation_until_repaired_and_comes_back_empty(machine):
    machine.put_tensor(2, "w", np.ones(4))
    machine.fail_ipu(22)
    calls = [
        lambda: machine.put_tensor(2, "x", np.ones(1)), lambda: machine.get_tensor(2, "w"),
        lambda: machine.get_slice(2, "w", 0, 1), lambda: machine.accumulate_slice(2, "w", 0, 1, np.ones(1)),
        lambda: machine.set_slice(2, "w", 0, 1, np.ones(1)), lambda: machine.free_tensor(2, "w"),
        lambda: machine.offload(2, "w"), lambda: machine.load(2, "w"),
        lambda: machine.run_step(Step(compute_sets=[ComputeSet(ipus={22: IpuWork(flops=1)})])),
        lambda: machine.run_step(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(sends={22: 8})})])),
    ]
    for call in calls:
        with pytest.raises(FailedPrecondition, match=r"IPU 22 \(IPU 2 of machine 5\) has failed; repair it"):
            call()
    machine.put_tensor(1, "ok", np.ones(1))  # the other IPUs still work
    assert machine.health()["failed_ipus"] == [22]
    machine.repair()
    assert machine.health()["failed_ipus"] == [] and machine.memories[2].tensors == {}


def test_ipu_links_fail_only_between_neighbours_touching_the_machine(machine):
    machine.fail_link(24, 20)  # IPU 0 of machine 5 to IPU 0 of machine 6: a torus neighbour
    machine.fail_link(21, 22)
    assert machine.health()["failed_links"] == [[20, 24], [21, 22]]
    with pytest.raises(FailedPrecondition, match="IPU-Link between IPUs 20 and 24 has failed"):
        machine.run_step(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(sends={24: 64})})]))
    # a collective's transfer over it is refused too (regression: rings crossed a failed link unnoticed)
    machine.put_tensor(1, "g", np.zeros(4, np.float32))
    for receive in (machine.set_slice, machine.accumulate_slice):
        with pytest.raises(FailedPrecondition, match="IPU-Link between IPUs 21 and 22 has failed: a collective's"):
            receive(1, "g", 0, 4, np.ones(4, np.float32), sender=22)
    machine.accumulate_slice(1, "g", 0, 4, np.ones(4, np.float32), sender=25)  # over a link that has not failed
    machine.set_slice(1, "g", 0, 4, np.ones(4, np.float32))  # a write of no IPU's (put by the host)
    with pytest.raises(InvalidArgument, match="IPUs 20 and 22 are not joined by an IPU-Link"):
        machine.fail_link(20, 22)
    with pytest.raises(InvalidArgument, match="does not touch machine 5"):
        machine.fail_link(0, 1)
    machine.repair()
    assert machine.health()["failed_links"] == []


def test_steps_and_traffic_add_up_in_stats(machine):
    step = Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=236_800), 1: IpuWork(sends={22: 32_000})})])
    times = machine.run_step(step)
    assert set(times.ipus) == {20, 21, 22}  # the receiver on this machine takes part in the sync
    machine.run_step(step)
    machine.record_traffic("gw_link", 1000, 500, 2e-6)
    stats = machine.stats()
    assert stats["steps"] == 2
    assert stats["per_ipu"][20]["compute_s"] == pytest.approx(2e-6)
    assert stats["per_ipu"][20]["utilisation"] == pytest.approx(2 * 1e-6 / (2 * times.step_s))
    assert stats["links"]["ipu_link"]["sent_bytes"] == 64_000 == stats["links"]["ipu_link"]["received_bytes"]
    assert stats["links"]["gw_link"] == {"sent_bytes": 1000, "received_bytes": 500, "virtual_s": 2e-6, "reports": 1}
    with pytest.raises(InvalidArgument, match="link_type 'pcie' is not one of ipu_link, gw_link"):
        machine.record_traffic("pcie", 1, 1, 0.0)


def test_utilisation_is_of_the_last_step_and_phase_times_add_up(machine):
    """What the utilisation gauge shows is the work running now (the IPU's last step), not an average over every
    job the machine has run; a repaired IPU comes back reset, having done nothing."""
    busy = machine.run_step(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=236_800)})]))
    exchange_only = machine.run_step(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(exchange_bytes=10_000_000)})]))
    stats = machine.stats()["per_ipu"][20]
    assert stats["utilisation"] == exchange_only.utilisation[20] == 0.0
    assert stats["compute_s"] == pytest.approx(busy.ipus[20].compute_s)
    machine.run_step(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=236_800)})]))
    assert machine.stats()["per_ipu"][20]["utilisation"] == pytest.approx(busy.utilisation[20])
    machine.fail_ipu(20)
    machine.repair()
    assert machine.stats()["per_ipu"][20]["utilisation"] == 0.0


def test_streaming_round_trip_through_the_machine(machine):
    machine.put_tensor(3, "opt", np.arange(1000, dtype=np.float32))
    charged = machine.offload(23, "opt")
    assert charged == pytest.approx(2e-6 + 4000 / 16e9)
    assert machine.stats()["streaming"]["used_bytes"] == 4000
    machine.load(3, "opt")
    assert machine.get_tensor(3, "opt")[999] == 999


def test_a_step_naming_one_ipu_twice_is_refused(machine):
    with pytest.raises(InvalidArgument, match="names an IPU of machine 5 twice"):
        machine.run_step(Step(compute_sets=[ComputeSet(ipus={1: IpuWork(), 21: IpuWork()})]))


def test_machine_index_must_be_in_the_pod(pod):
    with pytest.raises(InvalidArgument, match="machine 16 is not in bow-pod64; machines are 0..15"):
        Machine(pod, 16)


def test_reserved_sram_counts_in_stats_and_runs_out_like_a_tensor(machine):
    machine.reserve(1, "activations", 700_000_000)
    assert machine.stats()["per_ipu"][21]["sram_used_bytes"] == 700_000_000
    with pytest.raises(ResourceExhausted, match="'more'.*bytes over"):
        machine.reserve(1, "more", 300_000_000)  # 900 MB of SRAM per IPU
    machine.free_tensor(1, "activations")
    assert machine.stats()["per_ipu"][21]["sram_used_bytes"] == 0


def test_an_offloaded_tensor_is_freed_from_streaming_memory(machine):
    machine.put_tensor(2, "opt.m", np.ones(256, np.float32))
    machine.offload_batch([2], "opt.m")
    stats = machine.stats()
    assert stats["streaming"]["used_bytes"] == 1024 and stats["per_ipu"][22]["sram_used_bytes"] == 0
    assert stats["streaming"]["virtual_s"] == 0.0  # a batch is charged by settle_streaming
    assert machine.settle_streaming(1024, 1024) > 0
    machine.free_tensor(2, "opt.m")
    assert machine.stats()["streaming"]["used_bytes"] == 0


def test_free_each_frees_what_is_there_and_skips_what_is_gone(machine):
    machine.put_tensor(1, "params", np.ones(1000, np.float32))
    machine.reserve(2, "activations", 1000)
    machine.hold("held", {23: (3000, 0)})
    machine.free_each([(21, "params"), (22, "never put"), (2, "activations"), (23, "held")])
    assert all(ipu["sram_used_bytes"] == 0 for ipu in machine.stats()["per_ipu"].values())


def test_a_jobs_hold_is_what_its_ipus_report_until_freed(machine):
    machine.put_tensor(1, "params", np.ones(1000, np.float32))  # the emulation's own buffers: 4,000 bytes
    machine.put_tensor(2, "opt.m", np.ones(256, np.float32))
    machine.offload_batch([2], "opt.m")
    machine.hold("held", {21: (3000, 500), 22: (0, 700)})  # what the job counts the Pod holding
    stats = machine.stats()
    assert stats["per_ipu"][21]["sram_used_bytes"] == 3000 and stats["per_ipu"][21]["sram_allocated_bytes"] == 4000
    assert stats["streaming"]["used_bytes"] == 1200 and stats["streaming"]["allocated_bytes"] == 1024
    machine.hold("other", {21: (100, 0)})  # a second run on the IPU adds its own
    assert machine.stats()["per_ipu"][21]["sram_used_bytes"] == 3100
    for ipu, name in [(21, "held"), (21, "other"), (22, "held")]:
        machine.free_tensor(ipu, name)
    stats = machine.stats()  # back to the allocations
    assert stats["per_ipu"][21]["sram_used_bytes"] == 4000 and stats["streaming"]["used_bytes"] == 1024
    with pytest.raises(InvalidArgument, match="non-negative"):
        machine.hold("held", {21: (-1, 0)})
    machine.fail_ipu(23)
    with pytest.raises(FailedPrecondition):
        machine.hold("held", {23: (1, 1)})
