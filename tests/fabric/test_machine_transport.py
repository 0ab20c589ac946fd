"""MachineTransport: the machines a Ray actor would wrap, in-process. Collectives move the same data as on
LocalTransport, the machines' own counters count them, and capacity is the machines': tile SRAM and Streaming
Memory refuse what does not fit, naming the IPU, the bytes asked and the bytes free."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vipu.errors import ResourceExhausted
from vipu.fabric import LocalTransport, allreduce
from vipu.fabric.machine_transport import MachineTransport
from vipu.fabric.traffic import TrafficCounters
from vipu.workers.machine import Machine
from tests.fabric.helpers import block, pod


def machines(*indices: int) -> dict:
    return {m: (Machine(pod("bow-pod16"), m), threading.Lock()) for m in indices}


def test_an_allreduce_moves_the_same_data_as_in_process_and_counts_on_the_machines():
    group = block("bow-pod16", 8, 8)
    rng = np.random.default_rng(0)
    arrays = {ipu: rng.standard_normal(1000).astype(np.float32) for ipu in group.ipus}
    counters = TrafficCounters()
    on_machines, local = MachineTransport(machines(2, 3), 4, counters), LocalTransport()
    for transport in (on_machines, local):
        transport.put_tensors("g", arrays)
        allreduce(group, "g", transport)
    got, want = on_machines.get_tensors("g", group.ipus), local.get_tensors("g", group.ipus)
    assert all(np.array_equal(got[i], want[i]) for i in group.ipus)
    assert np.allclose(got[8], sum(arrays.values()), rtol=1e-5)
    sent = sum(m.stats()["links"]["ipu_link"]["sent_bytes"] for m, _ in on_machines.machines.values())
    assert sent > 0 and sent == sum(kinds["ipu_link"][0] for kinds in counters.by_machine(4).values())


def test_sram_and_streaming_memory_refuse_naming_the_ipu_and_the_bytes():
    transport = MachineTransport(machines(1), 4)
    sram = pod("bow-pod16").ipu.sram_per_tile_bytes * pod("bow-pod16").ipu.tiles
    with pytest.raises(ResourceExhausted) as too_big:
        transport.put_tensor(5, "w", np.zeros(sram // 4 + 1, np.float32))
    assert "IPU 5 (IPU 1 of machine 1)" in too_big.value.message
    assert f"needs {sram + 4:,} bytes" in too_big.value.message and f"({sram:,} free)" in too_big.value.message
    streaming = pod("bow-pod16").machine.streaming_memory_bytes
    transport.put_offloaded("big", {5: np.zeros(1000, np.uint8)})
    with pytest.raises(ResourceExhausted) as over:
        transport.put_offloaded("huge", {6: np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8),
                                                                            shape=(int(streaming),), strides=(0,))})
    assert "out of Streaming Memory on machine 1" in over.value.message and "IPU 6" in over.value.message
    assert f"needs {int(streaming):,} bytes but {int(streaming) - 1000:,} of" in over.value.message


def test_arrays_handed_over_and_views_read_never_change_what_the_other_side_holds():
    group = block("bow-pod16", 8, 8)
    transport = MachineTransport(machines(2, 3), 4)
    handed = {ipu: np.full(1000, ipu, np.float32) for ipu in group.ipus}
    kept = {ipu: np.full(1000, ipu, np.float32) for ipu in group.ipus}
    transport.put_tensors("g", handed, handed=True)
    transport.put_tensors("k", kept)
    with pytest.raises(ValueError, match="read-only"):
        handed[8] += 1  # a caller's later write is refused, not seen by the IPU
    kept[8] += 1  # a copy was put: the IPU keeps the values put
    assert transport.get_tensor(8, "k")[0] == 8
    before = transport.get_tensors("g", group.ipus)
    allreduce(group, "g", transport)
    transport.put_tensors("g", {8: np.zeros(1000, np.float32)})
    assert all((before[ipu] == ipu).all() for ipu in group.ipus)  # views read before keep their values
    assert transport.get_tensor(8, "g")[0] == 0 and transport.get_tensor(9, "g")[0] == sum(range(8, 16))
    sram = pod("bow-pod16").ipu.sram_per_tile_bytes * pod("bow-pod16").ipu.tiles
    with pytest.raises(ResourceExhausted, match="IPU 9 \\(IPU 1 of machine 2\\)"):
        transport.put_tensors("big", {9: np.zeros(sram // 4 + 1, np.float32)}, handed=True)


def test_a_tensor_put_in_streaming_memory_loads_onto_its_ipu():
    transport = MachineTransport(machines(0), 4)
    transport.put_offloaded("w", {2: np.arange(6.0).reshape(2, 3)})
    machine = transport.machines[0][0]
    assert machine.stats()["per_ipu"][2]["sram_used_bytes"] == 0
    assert machine.stats()["streaming"]["used_bytes"] == 48
    transport.load("w", [2])
    assert np.array_equal(transport.get_tensor(2, "w"), np.arange(6.0).reshape(2, 3))
    assert machine.stats()["per_ipu"][2]["sram_used_bytes"] == 48


def test_a_collective_over_a_failed_ipu_link_is_refused_as_the_machine_refuses_it():
    from vipu.errors import FailedPrecondition

    group = block("bow-pod16", 8, 8)
    transport = MachineTransport(machines(2, 3), 4)
    transport.put_tensors("g", {ipu: np.ones(64, np.float32) for ipu in group.ipus})
    transport.machines[2][0].fail_link(8, 9)
    with pytest.raises(FailedPrecondition, match="the IPU-Link between IPUs 8 and 9 has failed"):
        allreduce(group, "g", transport)
