"""The V-IPU controller's domain: one PodState, the admin and partition operations on it, and start-up.

On first start (no agents stored) it registers one agent per machine of the Pod and one cluster of them all, the
embedded default a user gets with `vipu-server` and no set-up. On a later start it rebuilds everything from the
records the store kept.
"""

from __future__ import annotations

from typing import Callable, Iterable

from pydantic import BaseModel

from vipu.hardware.pod import PodConfig
from vipu.hardware.topology import Topology
from vipu.partition.admin import Admin
from vipu.partition.admin_records import AGENT_HOST, DEFAULT_CLUSTER, Agent, Cluster
from vipu.partition.node_names import agent_name
from vipu.partition.placement import block_mask
from vipu.partition.pod_state import Journal, PodState
from vipu.partition.partitions import Partitions

AGENT_BASE_PORT = 8100  # emulated agents are not reachable sockets; the port only fills in the IPUoF view


class Controller:
    def __init__(
        self,
        pod: PodConfig,
        journal: Journal,
        now: Callable[[], float],
        records: Iterable[tuple[str, BaseModel]] = (),
    ):
        self.pod = pod
        self.state = PodState(pod=pod, topology=Topology(pod))
        for kind, record in records:
            self.state.table(kind)[record.name] = record
        for partition in self.state.partitions.values():
            self.state.used_mask |= block_mask(partition.first_ipu, partition.size)
        self.admin = Admin(self.state, journal, now)
        self.partitions = Partitions(self.state, journal, now)
        if not self.state.agents:
            self._bootstrap(journal, now())

    def _bootstrap(self, journal: Journal, now: float) -> None:
        agents = [
            Agent(name=agent_name(m, self.pod.machines), host=AGENT_HOST, port=AGENT_BASE_PORT + m, machine=m,
                  created_at=now)
            for m in range(self.pod.machines)
        ]
        cluster = Cluster(
            name=DEFAULT_CLUSTER,
            agents=[a.name for a in agents],
            num_ilds=self.pod.ilds,
            topology=self.pod.ild_topology,
            cluster_topology=self.pod.cluster_topology,
            created_at=now,
        )
        puts = [("agent", a.name, a) for a in agents] + [("cluster", cluster.name, cluster)]
        journal.commit(puts, [])
        self.state.apply(puts, [])
