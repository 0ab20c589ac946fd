"""The link model comes from the preset; routes stay inside the group; a hand-checked cost example."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.errors import InvalidArgument
from vipu.fabric import GW_LINK, IPU_LINK, LocalTransport, allreduce, allreduce_bound, link_model
from tests.fabric.helpers import block, topology


def test_figures_come_from_the_preset():
    links = link_model(topology("bow-pod256"))
    assert links.ipu_bytes_per_s == 32e9 and links.ipu_alpha_s == 1e-6
    assert links.gw_bytes_per_s == 12.5e9 and links.gw_links_per_machine == 2 and links.gw_alpha_s == 5e-6
    assert links.gamma_s_per_byte == pytest.approx(3 / 65e12)


@pytest.mark.parametrize("ipu, want", [(0, (0, 0)), (1, (0, 0)), (2, (0, 1)), (3, (0, 1)), (70, (17, 1))])
def test_two_ipus_share_each_gw_link(ipu, want):
    assert link_model(topology("bow-pod256")).gw_link(ipu) == want


@pytest.mark.parametrize("sending, want", [(1, 12.5e9), (2, 12.5e9), (3, 6.25e9), (4, 6.25e9)])
def test_gw_bandwidth_per_ipu(sending, want):
    assert link_model(topology("bow-pod256")).gw_bytes_per_ipu(sending) == want


def test_routes():
    links = link_model(topology("bow-pod256"))
    inside = block("bow-pod256", 0, 16).members
    assert links.route(0, 1, inside).links == (("ipu", 0, 1),)
    assert links.route(0, 4, inside).links == (("ipu", 0, 4),)  # same IPU of the next machine
    two_hops = links.route(0, 5, inside)
    assert two_hops.kind == IPU_LINK and len(two_hops.links) == 2 and two_hops.alpha_s == pytest.approx(2e-6)
    across = links.route(1, 65)
    assert across.kind == GW_LINK and across.links == (("gw-out", 0, 0), ("gw-in", 16, 0))
    assert across.alpha_s == 5e-6
    with pytest.raises(InvalidArgument):
        links.route(0, 2, frozenset({0, 2}))  # IPUs 0 and 2 of a machine are linked only through 1 or 3


def test_routes_never_leave_the_group():
    """Placement keeps partitions on their own IPU-Links; a route between two IPUs of a block stays in it."""
    links = link_model(topology("bow-pod64"))
    group = block("bow-pod64", 16, 16)
    for src in group.ipus:
        for dst in group.ipus:
            if src != dst:
                for _, a, b in links.route(src, dst, group.members).links:
                    assert a in group.members and b in group.members


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
