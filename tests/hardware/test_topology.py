"""Which machines a block covers, and which IPU pairs name a real IPU-Link."""

from pathlib import Path

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


@pytest.mark.parametrize("pod", ["bow-pod16", "bow-pod64", "bow-pod256", "bow-pod1024"])
def test_each_ipus_neighbours_are_the_ipu_links_that_touch_it(pod):
    topology = Topology(load_pod(pod))
    from_links: dict[int, set[int]] = {ipu: set() for ipu in range(topology.size)}
    for a, b in (tuple(link) for link in topology.ipu_links):
        from_links[a].add(b)
        from_links[b].add(a)
    assert {ipu: set(topology.neighbours(ipu)) for ipu in range(topology.size)} == from_links


def test_links_on_the_largest_pod_wrap_round_inside_each_pod64():
    topology = Topology(load_pod(str(Path(__file__).resolve().parents[2] / "examples/pods/pod65536.yaml")))
    last = topology.size - 1  # IPU 3 of machine 16,383: row 15 of ILD 1,023
    # row 0 of the ILD (the torus wraps), row 14, and IPUs 0 and 2 of its own machine
    assert sorted(topology.neighbours(last)) == [last - 60, last - 4, last - 3, last - 1]
    assert topology.linked(last, last - 60) and not topology.linked(last, last + 1)
    assert topology.machines_mask([0, 16_383]) == 0b1111 | 0b1111 << (topology.size - 4)
