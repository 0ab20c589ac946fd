"""A Ray node lost under a collective: how long until its machines are found lost, whether any machine of the
surviving node is taken for lost, how long a collective waiting on the lost node goes on, and a scrape's wait.

Run: .venv/bin/python bench/bench_node_loss.py

A two-node Ray cluster on this host (ray.cluster_utils.Cluster: a head and a second node, each offering ipu_host=2)
and a Fleet of 4 machines of a bow-pod16 under --machine-bundle ipu_host=1, so two machines on each node. A machine
of the second node is made busy (a call waiting on Ray's test SignalActor) with a read queued behind it; a machine
of the head waits on that read, as a collective's exchange waits on a peer's. Then every process of the second node
is killed (no graceful stop, as kill -9 does). Ray's GCS finds a node dead after its missed heartbeats (Ray's
defaults here), so the figures are mostly Ray's detection time. All wall-clock: print `uptime` beside them.
"""

from __future__ import annotations

import os
import threading
import time

import ray
from ray._common.test_utils import SignalActor
from ray.cluster_utils import Cluster

from vipu.fabric.actor_calls import ActorCalls
from vipu.hardware.pod_files import load_pod
from vipu.workers.fleet import Fleet


@ray.remote(num_cpus=0)
def _after(gate, value):
    return value


def main() -> None:
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    cluster = Cluster(initialize_head=True, connect=True,
                      head_node_args={"num_cpus": 1, "resources": {"ipu_host": 2}, "include_dashboard": False})
    second = cluster.add_node(num_cpus=1, resources={"ipu_host": 2})
    cluster.wait_for_nodes()
    lost_at: dict[int, float] = {}
    fleet = Fleet(load_pod("bow-pod16"), lambda machines: lost_at.update((m, time.monotonic()) for m in machines),
                  mode=cluster.address, bundle={"ipu_host": 1.0})
    fleet.start()
    pool = fleet.actors_for([0, 1, 2, 3])
    fleet.failures.brought_up([0, 1, 2, 3])
    first = fleet.stats()  # every machine answers once: a later scrape has a last answer for each
    health = pool.health()
    there = [m for m, h in health.items() if h["node"] == second.node_id]
    here = [m for m in health if m not in there]
    gate = SignalActor.options(resources={"node:__internal_head__": 0.001}).remote()
    busy = pool.actor(there[0]).free_each.remote(_after.remote(gate.wait.remote(), []))
    read = pool.actor(there[0]).get_tensors.remote("x", [])  # queued behind: never answers once the node is gone
    waiting = pool.actor(here[0]).free_each.remote(_after.remote(read, []))
    calls = ActorCalls({m: pool.actor(m) for m in (here[0], there[0])}, 600.0, False, lost=fleet.failures.lost)
    ended: dict[str, object] = {}

    def collective() -> None:
        try:
            calls.wait([waiting])
            ended["how"] = "returned"
        except Exception as e:  # noqa: BLE001 - printed
            ended["how"] = type(e).__name__
        ended["at"] = time.monotonic()

    thread = threading.Thread(target=collective)
    thread.start()
    killed = time.monotonic()
    cluster.remove_node(second, allow_graceful=False)
    thread.join(timeout=600)
    print(f"machines {there} on the lost node, {here} on the head; {len(first)} answered stats before")
    print("found lost: " + ", ".join(f"machine {m} after {at - killed:.1f} s" for m, at in sorted(lost_at.items())))
    print(f"machines of the head taken for lost: {sorted(set(lost_at) & set(here)) or 'none'}")
    print(f"the waiting collective ended {ended['how']} after {float(ended['at']) - killed:.1f} s")
    begun = time.monotonic()
    stats = fleet.stats()
    print(f"a scrape's stats took {time.monotonic() - begun:.2f} s:"
          f" {sorted(m for m, s in stats.items() if s.get('stale'))} stale of {sorted(stats)}")
    ray.get(gate.send.remote())
    del busy
    fleet.shutdown()
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
