"""A schedule's cost on hand-checked examples: the same with data moving as priced alone."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.fabric import LocalTransport, allreduce, allreduce_bound
from vipu.hardware.figures import GW_LINK, IPU_LINK
from tests.fabric.helpers import block


def test_hand_checked_two_ipus_one_megabyte():
    # IPUs 0 and 1 of a Pod16 share one IPU-Link (32 GB/s each way, alpha 1 us). 1 MB of float16 = 500,000 elements,
    # two shards of 250,000 (500,000 bytes). Reduce-scatter: one step, each IPU sends the other's shard over its own
    # direction of the link: 1 us + 500,000 B / 32e9 B/s = 1 + 15.625 = 16.625 us, then the receiver adds 500,000 B:
    # gamma = 3 / 65e12 s/B -> 0.0230769 us. All-gather: one step, 16.625 us, nothing to add.
    # Emulated: 33.25 + 0.0230769 = 33.2730769 us. Bound: 2(2-1)/2 x 1e6 / 32e9 = 31.25 us + 2 x 1 us = 33.25 us.
    group = block("bow-pod16", 0, 2)
    result = allreduce(group, "g", nbytes=1_000_000)
    assert result.steps == 2
    assert result.virtual_s == pytest.approx(33.2730769e-6, rel=1e-9)
    assert [(p.name, p.steps) for p in result.phases] == [("reduce-scatter ipu_link", 1), ("all-gather ipu_link", 1)]
    assert result.bytes_per_link_type == {IPU_LINK: 2_000_000, GW_LINK: 0}  # 500 kB each way, twice
    bound = allreduce_bound(group, 1_000_000)
    assert bound.total_s == pytest.approx(33.25e-6) and bound.ipu_bytes_per_s == 32e9
    assert result.virtual_s / bound.total_s == pytest.approx(1.000694, abs=1e-6)


def test_same_cost_with_and_without_data():
    group = block("bow-pod16", 0, 8)
    transport = LocalTransport()
    for ipu in group.ipus:
        transport.put_tensor(ipu, "g", np.ones(1000, dtype=np.float32))
    with_data = allreduce(group, "g", transport)
    without = allreduce(group, "g", nbytes=4000, dtype=np.float32)
    assert with_data.virtual_s == without.virtual_s and with_data.steps == without.steps
    assert list(transport.records) == [with_data]
