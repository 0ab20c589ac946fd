"""Builders for the fabric tests: Pods and groups by name, symbolic values that record the reduction order, and
numpy references computed in that order."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vipu.fabric import Group, LocalTransport
from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod, parse_pod
from vipu.hardware.topology import Topology

# Small Pods for hierarchical tests: (ILDs, machines per ILD, ILD topology)
SMALL_PODS = {
    "2x16-torus": (2, 4, "torus"),  # 2 ILDs of 16 IPUs (4 x 4 torus: 4 rings per ILD)
    "4x8-mesh": (4, 2, "mesh"),  # 4 ILDs of 8 IPUs: a GW ring of 4
    "2x8-mesh": (2, 2, "mesh"),  # 16 IPUs on 4 machines: hierarchical on real actors
}


@lru_cache(maxsize=None)
def pod(name: str) -> PodConfig:
    if name in SMALL_PODS:
        ilds, machines, kind = SMALL_PODS[name]
        return parse_pod({"name": name, "machine_preset": "bow-2000", "ilds": ilds, "machines_per_ild": machines,
                          "ild_topology": kind}, name)
    return load_pod(name)


@lru_cache(maxsize=None)
def topology(name: str) -> Topology:
    return Topology(pod(name))


def block(pod_name: str, first: int, size: int) -> Group:
    return Group.block(topology(pod_name), first, size)


class Sym:
    """A symbolic number: a leaf (an IPU) or the sum of two, in the order the data path added them."""

    __slots__ = ("tree",)

    def __init__(self, tree):
        self.tree = tree

    def __add__(self, other: Sym) -> Sym:
        return Sym((self.tree, other.tree))

    def __radd__(self, other):  # numpy's `+=` on object arrays calls a + b; keep it strict
        raise TypeError("only Sym + Sym is expected")


def leaves(tree) -> list[int]:
    return [tree] if isinstance(tree, int) else leaves(tree[0]) + leaves(tree[1])


def symbolic_run(collective, group: Group, numel: int, **kwargs) -> LocalTransport:
    """Run `collective` on symbolic tensors: element e of IPU i starts as Sym(i)."""
    transport = LocalTransport()
    for ipu in group.ipus:
        values = np.empty(numel, dtype=object)
        values[:] = [Sym(ipu) for _ in range(numel)]
        transport.put_tensor(ipu, "x", values)
    collective(group, "x", transport, **kwargs)
    return transport


def evaluate(tree, arrays: dict[int, np.ndarray], index: np.ndarray) -> np.ndarray:
    """The numpy values of `tree` at flat `index`, adding in exactly the tree's order (local + incoming)."""
    if isinstance(tree, int):
        return arrays[tree].reshape(-1)[index]
    return evaluate(tree[0], arrays, index) + evaluate(tree[1], arrays, index)


def reference_in_order(trees: np.ndarray, arrays: dict[int, np.ndarray]) -> np.ndarray:
    """Per element, its tree evaluated on the real arrays; elements sharing a tree are evaluated together."""
    some = next(iter(arrays.values()))
    out = np.empty(some.size, dtype=some.dtype)
    groups: dict = {}
    for e, sym in enumerate(trees):
        groups.setdefault(sym.tree, []).append(e)
    for tree, index in groups.items():
        out[np.array(index)] = evaluate(tree, arrays, np.array(index))
    return out.reshape(some.shape)


def put_all(transport, group: Group, arrays: dict[int, np.ndarray], name: str = "x") -> None:
    for ipu in group.ipus:
        transport.put_tensor(ipu, name, arrays[ipu])
