"""Training on real machine actors: a t=2 p=2 r=2 layout over 8 IPUs on 2 machines moves its weights, activations
and gradients through the actors, gives the same losses bit for bit as in-process, charges the machines' link
counters with the bytes an in-process run counts without actors and their BSP counters, and leaves their SRAM
empty."""

from __future__ import annotations

import numpy as np
import pytest

from tests.jobs.train.builders import ATOL, RTOL, mlp, pod, reference, run, workload
from vipu.fabric import LocalTransport
from vipu.fabric.traffic import TrafficCounters
from vipu.jobs.train.stats_without_actors import machine_stats


@pytest.fixture
def pool(ray_session):
    from vipu.workers.pool import MachinePool

    machines = MachinePool(pod())
    yield machines
    machines.shutdown()


@pytest.mark.parametrize("deferred", [False, True], ids=["each-call-waits", "deferred"])
def test_training_on_machine_actors(pool, deferred):
    import ray

    from vipu.fabric.ray_transport import RayTransport

    w = workload(mlp(), "adam", steps=3, t=2, p=2, r=2, micro_batches=2)
    on_actors = run(w, transport_factory=lambda group: RayTransport.for_group(pool, group, deferred=deferred))
    counters = TrafficCounters()  # what a controller without actors (--ray off) counts the link bytes into
    in_process = run(w, transport_factory=lambda group: LocalTransport(counters))
    assert on_actors.losses == in_process.losses
    np.testing.assert_allclose(on_actors.losses, reference(w)[0], rtol=RTOL, atol=ATOL)
    assert [r.emulated_step_s for r in on_actors.reports] == [r.emulated_step_s for r in in_process.reports]
    assert pool.machines == [0, 1]
    without_actors = machine_stats([], counters.by_machine(4), 4)
    for machine in (0, 1):
        stats = ray.get(pool.actor(machine).stats.remote())
        assert stats["links"]["ipu_link"]["sent_bytes"] > 0
        for kind, counted in without_actors[machine]["links"].items():  # both paths: the same bytes
            assert (stats["links"][kind]["sent_bytes"], stats["links"][kind]["received_bytes"]) == \
                (counted["sent_bytes"], counted["received_bytes"]), (machine, kind)
        assert stats["steps"] == 3
        for ipu in stats["per_ipu"].values():
            assert ipu["compute_s"] > 0 and ipu["tensors"] == 0 and ipu["sram_used_bytes"] == 0


def test_offloaded_state_and_activations_show_on_the_machines_while_the_job_runs(pool):
    import ray

    from vipu.fabric.ray_transport import RayTransport
    from vipu.jobs import plan

    w = workload(mlp(), "adam", steps=2, p=2, r=4, micro_batches=2, rts=True, offload_optimizer=True)
    seen = []

    def look(report):
        seen.append([ray.get(pool.actor(m).stats.remote()) for m in (0, 1)])

    on_actors = run(w, transport_factory=lambda group: RayTransport.for_group(pool, group), on_step=look)
    in_process = run(w)
    assert on_actors.losses == in_process.losses
    assert on_actors.emulated_parts == in_process.emulated_parts
    assert on_actors.emulated_parts["streaming memory"] > 0
    activations = int(plan(w, pod()).memory.activations)
    for step, machines in enumerate(seen, start=1):
        for stats in machines:
            assert stats["streaming"]["used_bytes"] > 0  # every IPU's m and v shards, between steps
            # charged once a step, the busiest machine's being the step's (RTS shards differ by an element)
            per_step = on_actors.emulated_parts["streaming memory"]
            assert stats["streaming"]["virtual_s"] == pytest.approx(step * per_step, rel=1e-3)
            for ipu in stats["per_ipu"].values():
                assert ipu["sram_used_bytes"] > activations  # params, grads and the activations of a step
    for machine in (0, 1):
        stats = ray.get(pool.actor(machine).stats.remote())
        assert stats["streaming"]["used_bytes"] == 0
        assert all(ipu["sram_used_bytes"] == 0 for ipu in stats["per_ipu"].values())
