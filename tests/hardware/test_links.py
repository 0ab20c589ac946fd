"""The link model comes from the preset; routes take the shortest IPU-Link path and stay inside the group."""

from __future__ import annotations

from functools import lru_cache

import pytest

from vipu.errors import InvalidArgument
from vipu.hardware.figures import GW_LINK, IPU_LINK
from vipu.hardware.links import link_model
from vipu.hardware.pod_files import load_pod
from vipu.hardware.topology import Topology


@lru_cache(maxsize=None)
def topology(name: str) -> Topology:
    return Topology(load_pod(name))


def block(first: int, size: int) -> frozenset[int]:
    return frozenset(range(first, first + size))


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
    inside = block(0, 16)
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
    group = block(16, 16)
    for src in group:
        for dst in group:
            if src != dst:
                for _, a, b in links.route(src, dst, group).links:
                    assert a in group and b in group
