"""Every collective on real machine actors (vipu.workers.pool.MachinePool) against numpy, for 1 to 16 IPUs, and
the hierarchical allreduce across two ILDs; the machines' link counters get the traffic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vipu.fabric import all_gather, allreduce, broadcast, reduce_scatter, send_recv, shard
from vipu.fabric.ray_transport import RayTransport
from tests.fabric.helpers import block, pod, reference_in_order, symbolic_run

names = (f"t{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def pools(ray_session):
    from vipu.workers.pool import MachinePool

    made = {}

    def get(pod_name: str) -> MachinePool:
        if pod_name not in made:
            made[pod_name] = MachinePool(pod(pod_name))
        return made[pod_name]

    yield get
    for pool in made.values():
        pool.shutdown()


def setup(pools, pod_name, first, size, arrays_of):
    group = block(pod_name, first, size)
    transport = RayTransport.for_group(pools(pod_name), group)
    name = next(names)
    arrays = {ipu: arrays_of(ipu) for ipu in group.ipus}
    transport.put_tensors(name, arrays)
    return group, transport, name, arrays


def floats(seed, shape=(6, 50), dtype=np.float32):
    return lambda ipu: np.random.default_rng(seed * 1000 + ipu).standard_normal(shape).astype(dtype)


SIZES = [(0, 1), (2, 2), (4, 4), (8, 8), (0, 16)]


@pytest.mark.parametrize("first, size", SIZES)
def test_allreduce_on_actors_is_bit_for_bit_the_ordered_reference(pools, first, size):
    group, transport, name, arrays = setup(pools, "bow-pod16", first, size, floats(size))
    allreduce(group, name, transport)
    order = symbolic_run(allreduce, group, 300).get_tensor(group.ipus[0], "x")
    want = reference_in_order(order, {ipu: a.reshape(-1) for ipu, a in arrays.items()}).reshape(6, 50)
    np.testing.assert_allclose(want, np.sum(list(arrays.values()), axis=0), rtol=1e-5, atol=1e-5)
    for ipu, got in transport.get_tensors(name, group.ipus).items():
        assert got.shape == (6, 50) and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("first, size", SIZES)
def test_reduce_scatter_and_all_gather_on_actors(pools, first, size):
    ints = lambda ipu: np.arange(301, dtype=np.int64) * (ipu + 1)  # noqa: E731
    group, transport, name, arrays = setup(pools, "bow-pod16", first, size, ints)
    reduce_scatter(group, name, transport)
    total = sum(arrays.values())
    got = transport.get_tensors(name, group.ipus)
    for rank, ipu in enumerate(group.ipus):
        a, b = shard(301, size, rank)
        np.testing.assert_array_equal(got[ipu][a:b], total[a:b])
    all_gather(group, name, transport)
    for array in transport.get_tensors(name, group.ipus).values():
        np.testing.assert_array_equal(array, total)


@pytest.mark.parametrize("first, size", SIZES)
def test_broadcast_and_send_recv_on_actors(pools, first, size):
    group, transport, name, arrays = setup(pools, "bow-pod16", first, size, floats(7, (123,), np.float16))
    root = group.ipus[-1]
    broadcast(group, root, name, transport)
    for array in transport.get_tensors(name, group.ipus).values():
        np.testing.assert_array_equal(array, arrays[root])
    if size > 1:
        transport.put_tensor(group.ipus[0], name, np.full(123, 7, np.float16))
        send_recv(group, group.ipus[0], root, name, transport)
        np.testing.assert_array_equal(transport.get_tensor(root, name), np.full(123, 7, np.float16))


def test_machines_count_the_traffic(pools):
    group, transport, name, _ = setup(pools, "bow-pod16", 0, 16, floats(3))
    pool = pools("bow-pod16")
    import ray

    before = ray.get([pool.actor(m).stats.remote() for m in range(4)])
    result = allreduce(group, name, transport)
    after = ray.get([pool.actor(m).stats.remote() for m in range(4)])
    sent = sum(a["links"]["ipu_link"]["sent_bytes"] - b["links"]["ipu_link"]["sent_bytes"]
               for a, b in zip(after, before))
    assert sent == result.bytes_per_link_type["ipu_link"] > 0
    assert after[0]["links"]["ipu_link"]["virtual_s"] - before[0]["links"]["ipu_link"]["virtual_s"] == \
        pytest.approx(result.virtual_s)


def test_hierarchical_allreduce_across_two_ilds_on_actors(pools):
    # a small Pod: 2 ILDs of 2 machines (8 IPUs each), so 16 IPUs on 4 actors run the GW phase for real
    group, transport, name, arrays = setup(pools, "2x8-mesh", 0, 16, lambda ipu: np.arange(77, dtype=np.int32) + ipu)
    result = allreduce(group, name, transport)
    for array in transport.get_tensors(name, group.ipus).values():
        np.testing.assert_array_equal(array, sum(arrays.values()))
    assert result.bytes_per_link_type["gw_link"] > 0


def test_a_failed_ipu_fails_the_collective_with_the_machines_error(pools):
    from vipu.errors import FailedPrecondition

    group, transport, name, _ = setup(pools, "bow-pod16", 12, 4, floats(5))
    pool = pools("bow-pod16")
    pool.fail_ipu(14)
    try:
        with pytest.raises(FailedPrecondition, match="IPU 14"):
            allreduce(group, name, transport)
    finally:
        pool.repair([3])


def test_a_failed_ipu_link_fails_a_collective_whose_ring_crosses_it(pools):
    """Regression: a ring crossed a failed IPU-Link, and the allreduce summed and priced as if it were there."""
    from vipu.errors import FailedPrecondition

    group, transport, name, _ = setup(pools, "bow-pod16", 8, 2, floats(6))  # IPUs 8 and 9: one link apart
    pool = pools("bow-pod16")
    pool.fail_link(8, 9)
    try:
        with pytest.raises(FailedPrecondition, match="IPU-Link between IPUs 8 and 9 has failed: a collective's"):
            allreduce(group, name, transport)
    finally:
        pool.repair([2])
    group, transport, name, arrays = setup(pools, "bow-pod16", 8, 2, floats(7))  # repaired: the ring runs again
    allreduce(group, name, transport)
    assert np.allclose(transport.get_tensor(9, name), arrays[8] + arrays[9])


@pytest.mark.parametrize("first, size", [(4, 4), (0, 16)])
def test_a_deferred_transport_gives_the_same_values_and_counts_with_one_wait(pools, first, size):
    """Deferred, a put, the collective's steps and its record go out together and the get waits for them all."""
    import ray

    group, plain, name, arrays = setup(pools, "bow-pod16", first, size, floats(8))
    allreduce(group, name, plain)
    want = plain.get_tensors(name, group.ipus)
    pool = pools("bow-pod16")
    machines = group.machines()
    before = ray.get([pool.actor(m).stats.remote() for m in machines])
    deferred = RayTransport.for_group(pool, group, deferred=True)
    deferred.put_tensors(name, arrays)
    result = allreduce(group, name, deferred)
    assert deferred.pending  # nothing awaited yet
    got = deferred.get_tensors(name, group.ipus)
    assert not deferred.pending
    for ipu in group.ipus:
        assert got[ipu].tobytes() == want[ipu].tobytes()
    after = ray.get([pool.actor(m).stats.remote() for m in machines])
    sent = sum(a["links"]["ipu_link"]["sent_bytes"] - b["links"]["ipu_link"]["sent_bytes"]
               for a, b in zip(after, before))
    assert sent == result.bytes_per_link_type["ipu_link"] > 0
    assert [a["links"]["ipu_link"]["reports"] - b["links"]["ipu_link"]["reports"]
            for a, b in zip(after, before)] == [1] * len(machines)


def test_a_deferred_collective_on_a_failed_ipu_raises_the_machines_error_at_the_next_wait(pools):
    from vipu.errors import FailedPrecondition

    group = block("bow-pod16", 12, 4)
    pool = pools("bow-pod16")
    transport = RayTransport.for_group(pool, group, deferred=True)
    name = next(names)
    transport.put_tensors(name, {ipu: floats(9)(ipu) for ipu in group.ipus})
    pool.fail_ipu(14)
    try:
        allreduce(group, name, transport)  # submitted, not awaited
        with pytest.raises(FailedPrecondition, match="IPU 14"):
            transport.get_tensors(name, [12])
        assert not transport.pending
    finally:
        pool.repair([3])


def test_deferred_reads_ahead_are_served_by_the_first_wait_each_as_it_was_read(pools):
    """Two reads of a tensor put between them: one wait (the first result asked for) serves both, and each gives
    the tensor as it was when read (what a pipeline tick's stages receive)."""
    group = block("bow-pod16", 0, 8)  # two machines
    transport = RayTransport.for_group(pools("bow-pod16"), group, deferred=True)
    waits = []
    wait = transport.calls.wait
    transport.calls.wait = lambda refs: waits.append(refs) or wait(refs)
    name = next(names)
    first, second = floats(10), floats(11)
    transport.put_tensors(name, {ipu: first(ipu) for ipu in group.ipus})
    early = transport.get_tensors_later(name, group.ipus)
    transport.put_tensors(name, {ipu: second(ipu) for ipu in group.ipus})
    late = transport.get_tensors_later(name, group.ipus)
    assert waits == []
    got_late, got_early = late(), early()
    assert len(waits) == 1 and early() is got_early
    for ipu in group.ipus:
        assert got_early[ipu].tobytes() == first(ipu).tobytes()
        assert got_late[ipu].tobytes() == second(ipu).tobytes()


def test_free_tensors_frees_each_in_one_call_per_machine_and_skips_what_is_gone(pools):
    from vipu.errors import NotFound

    group = block("bow-pod16", 8, 8)
    transport = RayTransport.for_group(pools("bow-pod16"), group, deferred=True)
    name = next(names)
    transport.put_tensors(name, {ipu: floats(12)(ipu) for ipu in group.ipus})
    transport.free_tensors([(8, "never put"), *((ipu, name) for ipu in group.ipus)])
    assert not transport.pending
    for ipu in (8, 15):
        with pytest.raises(NotFound):
            transport.get_tensor(ipu, name)


def test_equal_arrays_on_one_machine_travel_once_and_each_ipu_keeps_its_own(pools):
    """Replicas' weights after an update are equal: they go to the machine once, which copies them onto each IPU,
    so a collective that then changes each IPU differently gives what it gives on separate arrays. An array that
    differs only in the sign of a zero, or in dtype, is not taken for another."""
    from vipu.fabric import LocalTransport

    group = block("bow-pod16", 4, 4)
    transport = RayTransport.for_group(pools("bow-pod16"), group, deferred=True)
    local = LocalTransport()
    name = next(names)
    same = floats(13)(0)
    same[0, 0] = 0.0
    signed = same.copy()
    signed[0, 0] = -0.0
    arrays = {4: same, 5: same.copy(), 6: signed, 7: same.copy()}
    for t in (transport, local):
        t.put_tensors(name, arrays)
    [(method, (_, sent))] = transport.calls.queued[1]  # machine 1 holds IPUs 4-7
    assert method == "put_tensors" and sent[0] is sent[1] is sent[3] and sent[2] is not sent[0]
    assert transport.get_tensor(6, name).tobytes() == signed.tobytes() != same.tobytes()
    import ray

    back = ray.get(transport.actors[1].get_tensors.remote(name, [0, 1, 2, 3]))  # and back once, too
    assert back[0] is back[1] is back[3] and back[2] is not back[0]
    read = transport.get_tensors(name, [4, 5, 7])  # each IPU's own array again
    assert len({id(a) for a in read.values()}) == 3 and {a.tobytes() for a in read.values()} == {same.tobytes()}
    for t in (transport, local):
        reduce_scatter(group, name, t)
    want = local.get_tensors(name, group.ipus)
    got = transport.get_tensors(name, group.ipus)
    assert {ipu: a.tobytes() for ipu, a in got.items()} == {ipu: a.tobytes() for ipu, a in want.items()}
    assert got[4].tobytes() != got[5].tobytes()  # each IPU's own copy was reduced into
    other = next(names)
    transport.put_tensors(other, {4: same, 5: same.view(np.int32)})
    assert transport.get_tensor(5, other).dtype == np.int32
