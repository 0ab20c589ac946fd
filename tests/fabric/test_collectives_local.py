"""Every collective against numpy on in-process tensors, for groups of 1 to 64 IPUs and across ILDs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.errors import InvalidArgument
from vipu.fabric import Group, LocalTransport, all_gather, allreduce, broadcast, reduce_scatter, send_recv, shard
from vipu.hardware.figures import GW_LINK, IPU_LINK
from tests.fabric.helpers import block, put_all, topology

GROUPS = [  # (pod, first IPU, size): every size 1..16 at an offset, a whole torus Pod64, and across ILDs
    ("bow-pod16", 5, 1), ("bow-pod16", 6, 2), ("bow-pod16", 4, 4), ("bow-pod16", 8, 8), ("bow-pod16", 0, 16),
    ("bow-pod64", 0, 64), ("2x16-torus", 0, 32), ("4x8-mesh", 0, 32),
]
DTYPES = [np.int32, np.int64, np.float16, np.float32, np.float64]
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make_group(spec) -> Group:
    pod, first, size = spec
    return block(pod, first, size)


def random_arrays(group, shape, dtype, seed) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return {ipu: rng.integers(-1000, 1000, size=shape).astype(dtype) for ipu in group.ipus}
    return {ipu: rng.standard_normal(shape).astype(dtype) for ipu in group.ipus}


def transport_with(group, arrays) -> LocalTransport:
    transport = LocalTransport()
    put_all(transport, group, arrays)
    return transport


def check_sum(got: np.ndarray, arrays: dict[int, np.ndarray], dtype) -> None:
    stacked = np.stack([arrays[i] for i in sorted(arrays)])
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, stacked.sum(axis=0, dtype=dtype))
    else:
        tol = 2e-2 * len(arrays) if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), stacked.astype(np.float64).sum(axis=0), rtol=tol,
                                   atol=tol)


shapes = st.lists(st.integers(0, 9), min_size=0, max_size=3).map(tuple)


@pytest.mark.parametrize("spec", GROUPS)
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_allreduce_equals_numpy_sum(spec, shape, dtype, seed):
    group = make_group(spec)
    arrays = random_arrays(group, shape, dtype, seed)
    transport = transport_with(group, arrays)
    result = allreduce(group, "x", transport)
    results = [transport.get_tensor(ipu, "x") for ipu in group.ipus]
    for got in results:
        assert got.shape == shape and got.dtype == dtype
        check_sum(got, arrays, dtype)
        np.testing.assert_array_equal(got, results[0])  # every IPU the same bits
    assert result.virtual_s >= 0 and (result.steps == 0) == (group.size == 1 or np.prod(shape) == 0)


@pytest.mark.parametrize("spec", GROUPS)
@SETTINGS
@given(numel=st.integers(0, 200), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_reduce_scatter_leaves_each_rank_its_shard_of_the_sum(spec, numel, dtype, seed):
    group = make_group(spec)
    arrays = random_arrays(group, (numel,), dtype, seed)
    transport = transport_with(group, arrays)
    reduce_scatter(group, "x", transport)
    for rank, ipu in enumerate(group.ipus):
        a, b = shard(numel, group.size, rank)
        check_sum(transport.get_tensor(ipu, "x")[a:b], {i: v[a:b] for i, v in arrays.items()}, dtype)


@pytest.mark.parametrize("spec", GROUPS)
@SETTINGS
@given(numel=st.integers(0, 200), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_all_gather_assembles_every_ranks_shard(spec, numel, dtype, seed):
    group = make_group(spec)
    arrays = random_arrays(group, (numel,), dtype, seed)
    want = np.concatenate([arrays[ipu][slice(*shard(numel, group.size, r))] for r, ipu in enumerate(group.ipus)])
    transport = transport_with(group, arrays)
    all_gather(group, "x", transport)
    for ipu in group.ipus:
        np.testing.assert_array_equal(transport.get_tensor(ipu, "x"), want)


@pytest.mark.parametrize("spec", GROUPS)
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16), root_index=st.integers(0, 63))
def test_broadcast_copies_the_root_everywhere(spec, shape, dtype, seed, root_index):
    group = make_group(spec)
    root = group.ipus[root_index % group.size]
    arrays = random_arrays(group, shape, dtype, seed)
    transport = transport_with(group, arrays)
    broadcast(group, root, "x", transport)
    for ipu in group.ipus:
        np.testing.assert_array_equal(transport.get_tensor(ipu, "x"), arrays[root])


@pytest.mark.parametrize("spec", [g for g in GROUPS if g[2] > 1])
@SETTINGS
@given(numel=st.integers(1, 100), pair=st.tuples(st.integers(0, 63), st.integers(0, 63)), seed=st.integers(0, 99))
def test_send_recv_copies_one_tensor(spec, numel, pair, seed):
    group = make_group(spec)
    src, dst = group.ipus[pair[0] % group.size], group.ipus[pair[1] % group.size]
    if src == dst:
        return
    arrays = random_arrays(group, (numel,), np.float32, seed)
    transport = transport_with(group, arrays)
    result = send_recv(group, src, dst, "x", transport)
    for ipu in group.ipus:
        np.testing.assert_array_equal(transport.get_tensor(ipu, "x"), arrays[src if ipu == dst else ipu])
    crosses = group.topology.place(src).ild != group.topology.place(dst).ild
    assert result.bytes_per_link_type[GW_LINK if crosses else IPU_LINK] == numel * 4


@pytest.mark.parametrize("ilds", [2, 4])
def test_across_ilds_group_allreduces_over_gw_links_only(ilds):
    group = Group.across_ilds(topology("bow-pod256"), 5, ilds)
    assert group.ipus == tuple(5 + 64 * j for j in range(ilds))
    arrays = random_arrays(group, (37,), np.int64, 1)
    transport = transport_with(group, arrays)
    result = allreduce(group, "x", transport)
    for ipu in group.ipus:
        check_sum(transport.get_tensor(ipu, "x"), arrays, np.int64)
    assert result.bytes_per_link_type[IPU_LINK] == 0 and result.steps == 2 * (ilds - 1)


def test_traffic_adds_up_to_the_bytes_per_link_type():
    group = block("2x16-torus", 0, 32)
    result = allreduce(group, "x", nbytes=32_000)
    for kind in (IPU_LINK, GW_LINK):
        assert sum(t[kind][0] for t in result.traffic.values()) == result.bytes_per_link_type[kind] > 0
        assert sum(t[kind][1] for t in result.traffic.values()) == result.bytes_per_link_type[kind]


@pytest.mark.parametrize("bad", [lambda g: broadcast(g, 99, "x", nbytes=8), lambda g: send_recv(g, 0, 0, "x", nbytes=8),
                                 lambda g: allreduce(g, "x"), lambda g: Group.block(g.topology, 2, 4)])
def test_invalid_requests_say_what_to_fix(bad):
    with pytest.raises(InvalidArgument):
        bad(block("bow-pod16", 0, 4))
