"""One IPU's share of a compute set on the bow-2000 figures, with the arithmetic written out (the executor that adds
the shares up over a step: tests/workers/test_bsp.py)."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.hardware import bsp_cost
from vipu.hardware.pod_files import load_pod

POD = load_pod("bow-pod64")  # 1,472 tiles at 1.85 GHz, 128 FP16 / 32 FP32 FLOPs per tile-cycle, sync 0.15 us
IPU, LINK = POD.ipu, POD.links.ipu_link  # 11 TB/s exchange; IPU-Link 32 GB/s, 1 us
US = 1e-6


@pytest.mark.parametrize("values, tiles, per_cycle, want", [
    (236_800, None, 128, 1850),  # every tile 236,800 FP16 FLOPs: 1,850 cycles (1 us)
    (129, None, 128, 2),  # a part of a cycle is a whole one
    (59_200, 64, 32, 1850),  # FP32 on 64 tiles
    (1e9, 0, 128, 0),  # no tiles, no work
    ([128.0] * 1000 + [129.0], None, 128, 2),  # the busiest tile sets the pace
    ([10, 3700, 5], None, 1, 3700),  # cycles given directly
])
def test_busiest_tile_cycles(values, tiles, per_cycle, want):
    assert bsp_cost.busiest_tile_cycles(values, tiles, per_cycle, IPU) == want


@pytest.mark.parametrize("values, tiles, message", [
    (1.0, 2000, "tiles is 2000 but an IPU has 1472"),
    ([1.0] * 1473, None, "1473 per-tile values"),
])
def test_more_tiles_than_an_ipu_has_is_invalid(values, tiles, message):
    with pytest.raises(InvalidArgument, match=message):
        bsp_cost.busiest_tile_cycles(values, tiles, 128, IPU)


def test_the_sync_spans_chips_only_when_the_set_sends_over_ipu_links():
    assert bsp_cost.sync_s(IPU, LINK, spans_chips=False) == pytest.approx(0.15 * US)
    assert bsp_cost.sync_s(IPU, LINK, spans_chips=True) == pytest.approx(1.15 * US)


def test_exchange_on_chip_and_to_the_largest_peer():
    assert bsp_cost.exchange_s(11_000_000, {}, IPU, LINK) == pytest.approx(1 * US)  # 11 MB at 11 TB/s
    # and 32 kB to IPU 2 (8 kB to IPU 3 at the same time): 1 us latency + 32 kB at 32 GB/s
    assert bsp_cost.exchange_s(11_000_000, {2: 32_000, 3: 8_000}, IPU, LINK) == pytest.approx(3 * US)
