"""Streaming Memory: offload and load round trips with their charged virtual time, and capacity limits."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.conftest import small_ipu
from vipu.errors import AlreadyExists, NotFound, ResourceExhausted
from vipu.workers.streaming_memory import StreamingMemory
from vipu.workers.tile_sram import Linear

BW, LATENCY = 16.0e9, 2.0e-6  # the bow-2000 preset's streaming_memory_bytes_per_s and _latency_s


def test_round_trip_returns_identical_data_on_the_same_tiles_and_charges_latency_plus_bytes_over_bandwidth():
    ipu, streaming = small_ipu(8, 1000), StreamingMemory(1e6, BW, LATENCY)
    data = np.random.default_rng(7).standard_normal((20, 10)).astype(np.float32)  # 800 bytes
    ipu.allocate("w", data, Linear(3, 2))
    placed = ipu.used.copy()

    out = streaming.offload(0, ipu, "w")
    assert ipu.used_bytes == 0 and streaming.used_bytes == 800 and "w" not in ipu.tensors
    back = streaming.load(0, ipu, "w")

    assert np.array_equal(ipu.read("w"), data) and ipu.read("w").shape == (20, 10)
    assert np.array_equal(ipu.used, placed)  # tiles 3 and 4 again, 400 bytes each
    assert streaming.used_bytes == 0
    # 2 us + 800 B / 16 GB/s = 2 us + 50 ns, each way
    assert out == back == pytest.approx(2.0e-6 + 5.0e-8)
    t = streaming.transfers
    assert (t.offloads, t.loads, t.bytes_out, t.bytes_in) == (1, 1, 800, 800)
    assert t.virtual_s == pytest.approx(2 * (2.0e-6 + 5.0e-8))


def test_offload_beyond_capacity_is_out_of_memory_and_leaves_the_tensor_in_sram():
    ipu, streaming = small_ipu(), StreamingMemory(1000, BW, LATENCY, "machine 3")
    ipu.allocate("a", np.zeros(600, np.uint8))
    ipu.allocate("b", np.zeros(600, np.uint8))
    streaming.offload(0, ipu, "a")
    with pytest.raises(ResourceExhausted) as err:
        streaming.offload(0, ipu, "b")
    assert err.value.message == (
        "out of Streaming Memory on machine 3: tensor 'b' of IPU 0 needs 600 bytes but 400 of 1,000 are free:"
        " 200 bytes over; free offloaded tensors or configure more machine.streaming_memory_bytes")
    assert "b" in ipu.tensors and streaming.transfers.offloads == 1


def test_load_into_full_sram_fails_and_the_tensor_stays_offloaded():
    ipu, streaming = small_ipu(), StreamingMemory(1e6, BW, LATENCY)
    ipu.allocate("a", np.zeros(4000, np.uint8))
    streaming.offload(0, ipu, "a")
    ipu.allocate("b", np.zeros(1, np.uint8))
    with pytest.raises(ResourceExhausted, match="tensor 'a' needs 4,000 bytes"):
        streaming.load(0, ipu, "a")
    assert (0, "a") in streaming.tensors and streaming.used_bytes == 4000


def test_tensors_are_kept_per_ipu_and_names_must_be_unique_per_ipu():
    ipus, streaming = [small_ipu(label=f"IPU {i}") for i in range(2)], StreamingMemory(1e6, BW, LATENCY)
    for i, ipu in enumerate(ipus):
        ipu.allocate("w", np.full(4, i, np.int32))
        streaming.offload(i, ipu, "w")
    ipus[0].allocate("w", np.zeros(4, np.int32))
    with pytest.raises(AlreadyExists):
        streaming.offload(0, ipus[0], "w")
    streaming.load(1, ipus[1], "w")
    assert ipus[1].read("w").tolist() == [1, 1, 1, 1]
    with pytest.raises(NotFound, match="not in Streaming Memory"):
        streaming.load(1, ipus[1], "w")


def test_a_batch_moves_uncharged_and_settles_once_reads_and_writes_in_parallel():
    ipu, streaming = small_ipu(8, 1000), StreamingMemory(1e6, BW, LATENCY)
    ipu.allocate("m", np.zeros(100, np.float32))
    assert streaming.offload(0, ipu, "m", charge=False) == 0.0
    assert streaming.load(0, ipu, "m", charge=False) == 0.0
    assert streaming.transfers.virtual_s == 0.0
    # one latency, then the longer direction: 3,200 B in, 1,600 B out at 16 GB/s
    assert streaming.settle(3200, 1600) == pytest.approx(LATENCY + 3200 / BW)
    t = streaming.transfers
    assert (t.bytes_in, t.bytes_out, t.loads, t.offloads) == (3200, 1600, 1, 1)
    assert t.virtual_s == pytest.approx(LATENCY + 3200 / BW)
    assert streaming.settle(0, 0) == 0.0
