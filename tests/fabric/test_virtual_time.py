"""The virtual-time path (no data) up to 256 IPUs: the emulated allreduce against the analytic bound, and how time
grows with IPUs and bytes."""

from __future__ import annotations

import pytest

from vipu.fabric import all_gather, allreduce, allreduce_bound, broadcast, reduce_scatter, send_recv
from vipu.hardware.figures import GW_LINK, IPU_LINK
from tests.fabric.helpers import block

SIZES_BYTES = [10**6, 4 * 10**6, 16 * 10**6, 64 * 10**6, 256 * 10**6, 10**9]  # 1 MB .. 1 GB


@pytest.fixture(scope="module")
def pod256_times():
    """Emulated allreduce seconds on Pod256 blocks of 32..256 IPUs for 1 MB..1 GB (computed once: ~3 s)."""
    return {(p, n): allreduce(block("bow-pod256", 0, p), "g", nbytes=n) for p in (32, 64, 128, 256)
            for n in SIZES_BYTES}


@pytest.mark.parametrize("p", [32, 64, 128, 256])
def test_emulated_allreduce_within_ten_percent_of_the_bound_and_never_below(pod256_times, p):
    for n in SIZES_BYTES:
        ratio = pod256_times[(p, n)].virtual_s / allreduce_bound(block("bow-pod256", 0, p), n).total_s
        assert 1.0 <= ratio <= 1.10, f"{p} IPUs, {n} bytes: ratio {ratio:.4f}"


@pytest.mark.parametrize("pod, p", [("bow-pod16", 16), ("bow-pod64", 64), ("bow-pod128", 128)])
def test_every_preset_within_ten_percent(pod, p):
    for n in (10**6, 10**9):
        group = block(pod, 0, p)
        ratio = allreduce(group, "g", nbytes=n).virtual_s / allreduce_bound(group, n).total_s
        assert 1.0 <= ratio <= 1.10


def test_monotonic_in_bytes(pod256_times):
    for p in (32, 64, 128, 256):
        times = [pod256_times[(p, n)].virtual_s for n in SIZES_BYTES]
        assert times == sorted(times) and len(set(times)) == len(times)


def test_monotonic_in_ipus_among_blocks_with_the_same_links(pod256_times):
    """More IPUs cost more time, except that a whole torus ILD (64) uses 4 links per IPU where a 32-IPU block (not
    closed top to bottom) uses 2: for big tensors 64 IPUs are faster than 32. For 1 MB latency dominates."""
    for n in SIZES_BYTES:
        assert pod256_times[(64, n)].virtual_s < pod256_times[(128, n)].virtual_s < pod256_times[(256, n)].virtual_s
    small = [pod256_times[(p, 10**6)].virtual_s for p in (32, 64, 128, 256)]
    assert small == sorted(small)
    assert pod256_times[(64, 10**9)].virtual_s < pod256_times[(32, 10**9)].virtual_s
    times = [allreduce(block("bow-pod256", 0, p), "g", nbytes=10**8).virtual_s for p in (4, 8, 16, 32)]
    assert times == sorted(times)


def test_worked_examples_of_hardware_md(pod256_times):
    # 1 GB on a Pod64 over 4 links of the 2D torus: 2 x 63/64 x 1e9 / 128e9 = 15.38 ms, + 126 x 1 us of latency
    pod64 = pod256_times[(64, 10**9)]
    assert pod64.virtual_s == pytest.approx(15.38e-3 + 126e-6, rel=0.01)
    assert pod64.steps == 126
    # Pod256 GW phase: 2 x 3/4 x (1e9 / 64) / 6.25e9 = 3.75 ms, + 6 GW latencies
    pod256 = pod256_times[(256, 10**9)]
    gw = sum(phase.virtual_s for phase in pod256.phases if phase.name.endswith("gw_link"))
    assert gw == pytest.approx(3.75e-3 + 6 * 5e-6, rel=0.01)
    assert pod256.steps == 2 * 63 + 2 * 3
    # every IPU sends 2 x 63/64 of n over IPU-Links and 2 x 3/4 x n/64 over GW-Links
    assert pod256.bytes_per_link_type[IPU_LINK] == pytest.approx(256 * 2 * 63 / 64 * 1e9, rel=1e-3)
    assert pod256.bytes_per_link_type[GW_LINK] == pytest.approx(256 * 2 * 3 / 4 * 1e9 / 64, rel=1e-3)


@pytest.mark.parametrize("p", [32, 64, 128, 256])
def test_every_collective_prices_up_to_256_ipus(pod256_times, p):
    group = block("bow-pod256", 0, p)
    n = 64 * 10**6
    whole = pod256_times[(p, n)].virtual_s
    halves = reduce_scatter(group, "g", nbytes=n).virtual_s + all_gather(group, "g", nbytes=n).virtual_s
    assert halves == pytest.approx(whole, rel=1e-12)
    assert 0.95 * whole < broadcast(group, group.ipus[-1], "g", nbytes=n).virtual_s < whole  # no reductions
    last = group.ipus[-1]
    one = send_recv(group, 0, last, "g", nbytes=n)
    if p > 64:
        assert one.virtual_s == pytest.approx(5e-6 + n / 12.5e9)  # alone on its GW-Links
    else:
        assert one.bytes_per_link_type[IPU_LINK] == n and one.virtual_s > n / 32e9
