"""A machine busy in a long call (one whose arguments wait on a peer, as a collective's do) is not a lost machine,
and a call waiting on a machine the controller found lost ends.

Uses the session's Ray (tests/conftest.py). The long call is a real actor call whose argument waits on Ray's own
test SignalActor, as a collective's waits on a peer's read."""

from __future__ import annotations

import threading
import time

import pytest
import ray

from vipu.errors import MachineLost
from vipu.fabric.actor_calls import ActorCalls
from vipu.workers.machine_failures import FailureWatch


@ray.remote(num_cpus=0)
def _after(gate, value):
    return value


@pytest.fixture
def signal(ray_session):
    from ray._common.test_utils import SignalActor

    gate = SignalActor.remote()
    yield gate
    ray.get(gate.send.remote())
    ray.kill(gate)


def test_a_machine_busy_in_a_long_call_answers_its_health_probe_and_is_not_lost(pool, signal):
    actor = pool.actors_for([0])[0]
    busy = actor.free_each.remote(_after.remote(signal.wait.remote(), []))
    lost = []
    watch = FailureWatch(lost.extend)
    watch.brought_up([0])
    health = pool.health()
    assert health[0]["alive"] and health[0]["restarts"] == 0 and health[0]["pid"] > 0
    assert watch.check(pool.health()) == [] and lost == []
    ray.get(signal.send.remote())
    assert ray.get(busy, timeout=30) is None
    assert pool.health()[0]["failed_ipus"] == []  # the machine's own answer, once it is free again


def test_a_call_waiting_on_a_machine_found_lost_ends_as_machine_lost(pool, signal):
    actors = pool.actors_for([0, 1])
    watch = FailureWatch(lambda machines: None)
    watch.brought_up([0, 1])
    calls = ActorCalls(actors, timeout_s=600.0, deferred=False, lost=watch.lost)
    waiting = actors[1].free_each.remote(_after.remote(signal.wait.remote(), []))
    ended: list[BaseException] = []

    def collective():
        try:
            calls.wait([waiting])
        except BaseException as e:  # noqa: BLE001 - the test reads it
            ended.append(e)

    thread = threading.Thread(target=collective)
    thread.start()
    assert watch.check({1: {"alive": False}}) == [1]  # what the health check says of a machine on a dead node
    thread.join(timeout=30)
    assert not thread.is_alive(), "the wait went on after its machine was found lost"
    assert isinstance(ended[0], MachineLost) and "machines [1] were lost" in str(ended[0])


def test_stats_of_a_machine_that_does_not_answer_in_time_are_its_last_marked_stale(ray_session, pod, signal):
    from vipu.workers.fleet import Fleet

    fleet = Fleet(pod, lambda machines: None)
    try:
        actors = fleet.actors_for([0, 1]).actors_for([0, 1])
        first = fleet.stats()
        assert sorted(first) == [0, 1] and not any(s.get("stale") for s in first.values())
        busy = actors[1].free_each.remote(_after.remote(signal.wait.remote(), []))
        begun = time.monotonic()
        stats = fleet.stats()
        stats_again = fleet.stats()  # the machine is not asked twice: its first ask is still owed
        assert time.monotonic() - begun < 10  # two scrapes, not one 5 s wait per machine each
        assert not stats[0].get("stale") and stats[1]["stale"] and stats_again[1]["stale"]
        assert stats[1]["per_ipu"] == first[1]["per_ipu"]  # its last answer
        ray.get(signal.send.remote())
        ray.get(busy, timeout=30)
        assert not fleet.stats()[1].get("stale")  # answers again once free
    finally:
        fleet.shutdown()


def test_a_gcs_that_does_not_answer_leaves_the_machines_unknown_not_lost(pool, monkeypatch):
    """Regression: one failed GCS lookup raised out of health(), so the check after a run's MachineLost raised in
    its handler and the job was never ended."""
    import vipu.workers.pool as pool_module

    pool.actors_for([0])

    def unanswered(handle):
        raise TimeoutError("GCS request timed out")

    monkeypatch.setattr(pool_module, "actor_state", unanswered)
    lost = []
    watch = FailureWatch(lost.extend)
    watch.brought_up([0])
    assert pool.health() == {}
    assert watch.check(pool.health()) == [] and lost == []
    monkeypatch.undo()
    assert pool.health()[0]["alive"]
