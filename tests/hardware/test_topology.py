"""Which machines a block covers, and which IPU pairs name a real IPU-Link."""

import pytest

from vipu.errors import InvalidArgument
from vipu.hardware.pod_files import load_pod
from vipu.hardware.topology import Topology


@pytest.mark.parametrize("first, size, machines", [(0, 1, [0]), (4, 4, [1]), (2, 2, [0]), (8, 16, [2, 3, 4, 5])])
def test_machines_of_a_block(first, size, machines):
    assert Topology(load_pod("bow-pod64")).machines_of(first, size) == machines


@pytest.mark.parametrize("a, b, refusal", [
    (0, 1, None), (0, 4, None), (0, 60, None), (0, 2, "not joined by an IPU-Link"),
    (0, 64, "ipu 64 does not exist; bow-pod64 has IPUs 0 to 63"), (-1, 0, "ipu -1 does not exist"),
])
def test_require_link(a, b, refusal):
    topology = Topology(load_pod("bow-pod64"))
    if refusal is None:
        topology.require_link(a, b)
    else:
        with pytest.raises(InvalidArgument, match=refusal):
            topology.require_link(a, b)
