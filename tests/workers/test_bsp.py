"""The BSP cost rules on hand-checked examples, with the arithmetic written out."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.workers import bsp
from vipu.workers.bsp import ComputeSet, IpuWork, Step

US = 1e-6


@pytest.fixture
def spec(pod):
    return pod.ipu, pod.links.ipu_link


def test_hand_checked_two_compute_sets(spec):
    ipu, link = spec
    # bow-2000: 1.85 GHz, 128 FP16 / 32 FP32 FLOPs per tile-cycle, 11 TB/s exchange, sync 0.15 us,
    # IPU-Link 32 GB/s with 1 us latency.
    step = Step(compute_sets=[
        ComputeSet(name="matmul", ipus={
            # every tile 236,800 FLOPs = 1,850 cycles = 1 us; exchange 11 MB on-chip = 1 us
            0: IpuWork(flops=236_800, exchange_bytes=11_000_000),
            # every tile 473,600 FLOPs = 3,700 cycles = 2 us; send 32 kB to IPU 2 = 1 us latency + 1 us
            1: IpuWork(flops=473_600, sends={2: 32_000}),
        }),
        # the set sends over IPU-Links, so its sync spans chips: 0.15 us + 1 us link latency = 1.15 us
        # set 1 = max compute 2 + sync 1.15 + max exchange 2 = 5.15 us
        ComputeSet(name="fp32-update", dtype="fp32", ipus={
            # 64 tiles x 59,200 FLOPs / 32 per cycle = 1,850 cycles = 1 us on IPU 0 only; on-chip sync 0.15 us
            0: IpuWork(flops=59_200, tiles=64),
        }),
        # set 2 = 1 + 0.15 + 0 = 1.15 us
    ], ipus=[0, 1, 2])
    times = bsp.run(step, ipu, link)

    assert [s.total_s for s in times.sets] == pytest.approx([5.15 * US, 1.15 * US])
    assert times.step_s == pytest.approx(6.3 * US)
    # per IPU: compute, then sync = everything it spent waiting (incl. the sync itself), then exchange
    #   IPU 0: set 1 computes 1, exchanges 1, waits 5.15 - 2 = 3.15; set 2 computes 1, waits 0.15
    #   IPU 1: set 1 computes 2, exchanges 2, waits 1.15; set 2 only waits 1.15
    #   IPU 2 only receives (the sender pays the exchange): it waits through both sets, 5.15 + 1.15
    want = {0: (1 + 1, 3.15 + 0.15, 1 + 0), 1: (2 + 0, 1.15 + 1.15, 2 + 0), 2: (0, 5.15 + 1.15, 0)}
    for k, (compute, sync, exchange) in want.items():
        got = times.ipus[k]
        assert (got.compute_s, got.sync_s, got.exchange_s) == pytest.approx((compute * US, sync * US, exchange * US))
        assert got.total_s == pytest.approx(times.step_s)
    # utilisation = compute / step: 2 / 6.3 and 2 / 6.3 and 0
    assert times.utilisation == pytest.approx({0: 2 / 6.3, 1: 2 / 6.3, 2: 0.0})


def test_1472_tiles_of_128_cycles(spec):
    ipu, link = spec
    # 1,472 tiles x 16,384 FP16 FLOPs = 128 cycles each; 128 / 1.85e9 = 69.19 ns; on-chip sync only
    times = bsp.run(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=16_384)})]), ipu, link)
    assert times.ipus[0].compute_s == pytest.approx(128 / 1.85e9)
    assert times.step_s == pytest.approx(128 / 1.85e9 + 0.15 * US)


def test_the_busiest_tile_sets_the_pace_and_cycles_round_up(spec):
    ipu, link = spec
    uneven = IpuWork(flops=[128.0] * 1000 + [129.0])  # 129 FLOPs need 2 cycles on one tile
    given = IpuWork(cycles=[10, 3700, 5])
    times = bsp.run(Step(compute_sets=[ComputeSet(ipus={0: uneven, 1: given})]), ipu, link)
    assert times.ipus[0].compute_s == pytest.approx(2 / 1.85e9)
    assert times.ipus[1].compute_s == pytest.approx(2 * US)


def test_no_work_on_zero_tiles(spec):
    times = bsp.run(Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=1e9, tiles=0)})]), *spec)
    assert times.ipus[0].compute_s == 0 and times.utilisation == {0: 0.0}


@pytest.mark.parametrize("step, message", [
    (Step(compute_sets=[ComputeSet(ipus={3: IpuWork()})], ipus=[0]), r"gives work to IPUs \[3\]"),
    (Step(compute_sets=[ComputeSet(ipus={0: IpuWork(flops=1.0, tiles=2000)})]), "tiles is 2000 but an IPU has 1472"),
    (Step(compute_sets=[ComputeSet(ipus={0: IpuWork(cycles=[1.0] * 1473)})]), "1473 per-tile values"),
])
def test_impossible_steps_are_invalid(spec, step, message):
    with pytest.raises(InvalidArgument, match=message):
        bsp.run(step, *spec)


def test_parse_names_the_bad_field():
    with pytest.raises(InvalidArgument, match=r"invalid BSP step: compute_sets.0.ipus.0.flops"):
        Step.parse({"compute_sets": [{"ipus": {"0": {"flops": -1}}}]})
    assert Step.parse({"compute_sets": [{"ipus": {"0": {"flops": 1}}}]}).participants() == [0]


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_compute_only_is_run_of_one_compute_set_to_the_bit(spec, dtype):
    """The engine's plain-number pricing (no models built) gives exactly what run() gives for the same set."""
    ipu, link = spec
    for flops in ({0: 1.0}, {3: 236_800.0, 1: 12_345.678, 2: 0.0}, {5: 1e9 / 1472 / 0.284, 4: 7.5}):
        want = bsp.run(Step(compute_sets=[ComputeSet(dtype=dtype, ipus={k: IpuWork(flops=v) for k, v in
                                                                         flops.items()})]), ipu, link)
        assert bsp.compute_only(ipu, link, dtype, flops) == want
