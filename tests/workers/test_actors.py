"""Machine actors through Ray: round trips, errors crossing the actor boundary, lazy reuse, kill and restart.

Uses the session's Ray (tests/conftest.py); each test's pool is shut down by the `pool` fixture."""

from __future__ import annotations

import time

import numpy as np
import pytest
import ray

from vipu.errors import FailedPrecondition, NotFound, ResourceExhausted, Unavailable
from vipu.workers.bsp import ComputeSet, IpuWork, Step


def wait_for(pool, machine: int, ready, timeout_s: float = 30.0) -> dict:
    """Poll the pool's health until `ready(report)` holds for `machine`."""
    deadline = time.monotonic() + timeout_s
    while True:
        report = pool.health().get(machine, {})
        if ready(report):
            return report
        assert time.monotonic() < deadline, f"machine {machine} never got there: {report}"
        time.sleep(0.1)


def test_tensor_round_trips_and_domain_errors_cross_the_actor_boundary(pool):
    actors = pool.actors_for([0, 1])
    m0, m1 = actors[0], actors[1]
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    ray.get([m0.put_tensor.remote(2, "g", data), m1.put_tensor.remote(5, "g", data * 10, 8)])  # IPU 5 = IPU 1 of m1

    ray.get(m0.accumulate_slice.remote(2, "g", 4, 8, np.ones(4, np.float32)))
    ray.get(m1.set_slice.remote(1, "g", 0, 2, np.array([-1, -2], np.float32)))
    assert ray.get(m0.get_tensor.remote(2, "g")).tolist() == [[0, 1, 2, 3], [5, 6, 7, 8], [8, 9, 10, 11]]
    assert ray.get(m1.get_slice.remote(5, "g", 0, 3)).tolist() == [-1, -2, 20]
    assert ray.get(m1.offload.remote(1, "g")) == pytest.approx(2e-6 + 48 / 16e9)
    ray.get(m1.load.remote(1, "g"))
    ray.get(m0.free_tensor.remote(2, "g"))

    with pytest.raises(ResourceExhausted, match=r"tensor 'huge' needs 700,000 bytes on tile 0"):
        ray.get(m0.put_tensor.remote(0, "huge", np.zeros(700_000, np.uint8), 1))
    with pytest.raises(NotFound, match="no tensor 'g' on IPU 2"):
        ray.get(m0.get_tensor.remote(2, "g"))
    ray.get(m0.fail_ipu.remote(3))
    with pytest.raises(FailedPrecondition, match=r"IPU 3 \(IPU 3 of machine 0\) has failed"):
        ray.get(m0.put_tensor.remote(3, "x", np.ones(1)))

    times = ray.get(m1.run_step.remote(Step(compute_sets=[ComputeSet(ipus={4: IpuWork(flops=236_800)})])))
    assert times.ipus[4].compute_s == pytest.approx(1e-6)
    ray.get(m1.record_traffic.remote("ipu_link", 100, 200, 1e-6))
    stats = ray.get(m1.stats.remote())
    assert stats["steps"] == 1 and stats["links"]["ipu_link"]["received_bytes"] == 200
    assert pool.health()[0]["failed_ipus"] == [3]


def test_actors_are_created_once_and_pinned_to_their_own_placement_group(pool):
    first = pool.actors_for([0, 1])
    assert pool.created == 2
    again = pool.actors_for([1, 0])
    assert pool.created == 2 and again == first  # reused: nothing started
    pool.actors_for([1, 2])
    assert pool.created == 3 and pool.machines == [0, 1, 2]
    health = pool.health()
    groups = {m: health[m]["placement_group"] for m in (0, 1, 2)}
    assert groups == {m: pool._groups[m].id.hex() for m in (0, 1, 2)} and len(set(groups.values())) == 3


def test_a_killed_machine_is_restarted_by_ray_and_the_restart_is_surfaced(pool):
    actors = pool.actors_for([0, 1])
    ray.get(actors[1].put_tensor.remote(0, "w", np.ones(8)))
    before = pool.health()[1]
    assert before["restarts"] == 0

    pool.kill(1)
    after = wait_for(pool, 1, lambda r: r.get("alive") and r.get("restarts", 0) >= 1)

    assert after["restarts"] == 1 and after["pid"] != before["pid"]
    assert after["placement_group"] == before["placement_group"]  # back in the same reservation
    with pytest.raises(NotFound, match="no tensor 'w'"):  # a restarted machine has lost what it held
        ray.get(actors[1].get_tensor.remote(0, "w"))
    assert pool.health()[0]["restarts"] == 0  # the other machine did not notice
    assert pool.actors_for([1])[1] == actors[1] and pool.created == 2  # the same actor, not a new one


def test_a_machine_killed_for_good_is_dropped_and_started_afresh(pool):
    pool.actors_for([0])
    pool.kill(0, restart=False)
    assert pool.machines == []
    with pytest.raises(NotFound, match="machine 0 has no actor"):
        pool.kill(0)
    pool.actors_for([0])
    assert pool.created == 2 and pool.health()[0]["restarts"] == 0


def test_actors_that_cannot_start_fail_with_the_machines_named(ray_session, pod):
    from vipu.workers.pool import MachinePool

    pool = MachinePool(pod, bundle={"no_such_resource": 1}, place_timeout_s=1.0)
    try:  # a reservation no node can place says so, within its own timeout, not the actors' (60 s)
        with pytest.raises(Unavailable, match=r"machine actors did not start \(machine 3: no Ray node had"
                                              r" \{'no_such_resource': 1\} free for its placement group within 1 s\)"):
            pool.actors_for([3])
        assert pool.machines == []
    finally:
        pool.shutdown()


def test_a_start_that_waits_holds_up_neither_health_checks_nor_other_machines_nor_shutdown(ray_session, pod):
    """A start that cannot be placed (here: a resource no node has; live: a lost node's) waits up to its timeout,
    but without the pool's lock: health checks answer, a second caller for the same machine waits for that start
    rather than starting it twice, and shutdown ends the wait within a second, leaving no reservation behind."""
    import threading

    from ray.util import placement_group_table

    from vipu.workers.pool import MachinePool

    pool = MachinePool(pod, bundle={"no_such_resource": 1}, ready_timeout_s=120.0)
    errors: list[Exception] = []

    def start():
        try:
            pool.actors_for([5])
        except Exception as e:  # noqa: BLE001 - collected for the assertions below
            errors.append(e)

    callers = [threading.Thread(target=start) for _ in range(2)]
    for t in callers:
        t.start()
    time.sleep(1.0)
    begun = time.monotonic()
    assert pool.health() == {} and time.monotonic() - begun < 5  # not behind the 120 s start
    assert pool.created == 1  # the second caller waits for the first one's start
    begun = time.monotonic()
    pool.shutdown()
    for t in callers:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in callers) and time.monotonic() - begun < 5
    assert len(errors) == 2 and all(isinstance(e, Unavailable) and "shut down" in str(e) for e in errors), errors
    assert pool.machines == [] and pool.created == 1
    live = [g for g in placement_group_table().values() if g["state"] != "REMOVED" and g["bundles"].get(0) ==
            {"no_such_resource": 1.0}]
    assert live == []
