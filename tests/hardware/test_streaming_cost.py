"""Streaming Memory transfers on the bow-2000 figures: alone, latency plus bytes; in a batch, the longer direction."""

from __future__ import annotations

import pytest

from vipu.hardware.streaming_cost import duplex_s, transfer_s

BW, LATENCY = 16.0e9, 2.0e-6  # the bow-2000 preset's streaming_memory_bytes_per_s and _latency_s


def test_one_transfer_is_latency_plus_bytes_over_bandwidth():
    assert transfer_s(800, BW, LATENCY) == pytest.approx(2.0e-6 + 5.0e-8)


@pytest.mark.parametrize("bytes_in, bytes_out, want", [
    (3200, 1600, LATENCY + 3200 / BW),  # reads and writes at once: the longer direction counts
    (1600, 3200, LATENCY + 3200 / BW),
    (0, 0, 0.0),  # nothing to move: not even the latency
])
def test_a_batch_reads_and_writes_in_parallel(bytes_in, bytes_out, want):
    assert duplex_s(bytes_in, bytes_out, BW, LATENCY) == pytest.approx(want)
