"""Which machines a block covers, and which IPU pairs name a real IPU-Link."""

import pytest

from vipu.errors import InvalidArgument
from vipu.partition.pod import load_pod
from vipu.partition.topology import Topology


@pytest.mark.parametrize("first, size, machines", [(0, 1, [0]), (4, 4, [1]), (2, 2, [0]), (8, 16, [2, 3, 4, 5])])
def test_machines_of_a_block(first, size, machines):
    assert Topology(load_pod("bow-pod64")).machines_of(first, size) == machines


@pytest.mark.parametrize("a, b, ok", [(0, 1, True), (0, 4, True), (0, 60, True), (0, 2, False), (0, 64, False)])
def test_require_link(a, b, ok):
    topology = Topology(load_pod("bow-pod64"))
    if ok:
        topology.require_link(a, b)
    else:
        with pytest.raises(InvalidArgument, match="not joined by an IPU-Link"):
            topology.require_link(a, b)
