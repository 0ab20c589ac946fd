"""Domain records to protobuf messages: the only place that knows both shapes. Each creation time is written
twice for one release, as create_time and as the deprecated created_at double (docs/api.md, Compatibility)."""

from __future__ import annotations

import json

from vipu.client.messages import timestamp
from vipu.partition import ipuof
from vipu.partition.admin_records import Agent, Allocation, Cluster, Reason, User
from vipu.partition.agent_states import ONLINE, AgentView, agent_state
from vipu.partition.partition_record import GW_ROUTING, ILD_ROUTING, Partition
from vipu.partition.ipu_status import IpuStatus, MachineStatus
from vipu.hardware.pod import PodConfig
from vipu.partition.pod_state import PodState
from vipu.hardware.topology import Topology
from vipu.v1 import admin_pb2 as a
from vipu.workers.telemetry import ipu_reading
from vipu.v1 import partition_pb2 as p


def partition(part: Partition, pod: PodConfig) -> p.Partition:
    return p.Partition(
        name=part.name,
        size=part.size,
        num_gcds=part.num_gcds,
        gcd_sync_replicas=part.gcd_sync_replicas,
        reconfigurable=part.reconfigurable,
        sync_type=part.sync_type,
        allocation=part.allocation,
        cluster=part.cluster,
        owner=part.owner,
        state=part.state.value,
        holder=part.holder or "",
        first_ipu=part.first_ipu,
        ipus=list(part.ipus),
        ilds=max(1, part.size // pod.ild_ipus),
        ild_routing=ILD_ROUTING,
        gw_routing=GW_ROUTING,
        created_at=part.created_at,
        create_time=timestamp(part.created_at),
        history=[p.StateChange(state=t.state.value, at=t.at, time=timestamp(t.at)) for t in part.history],
    )


def partition_view(
    part: Partition, state: PodState, api_host: str, api_port: int, ipu_configs: bool, gcd: int | None
) -> p.PartitionView:
    gcds = range(part.num_gcds) if gcd is None else [gcd]
    return p.PartitionView(
        partition=partition(part, state.pod),
        machines=[
            p.PartitionMachine(
                machine=m["machine"],
                agent=m["agent"],
                host=m["host"],
                port=m["port"],
                ipus=[p.PartitionIpu(**ipu) for ipu in m["ipus"]],
            )
            for m in ipuof.machines(part, state)
        ],
        ring=state.topology.ring(part.first_ipu, part.size),
        gcds=[
            p.GcdView(
                gcd=g,
                ipus=list(part.gcd_ipus(g)),
                environment=ipuof.environment(part, state, api_host, api_port, g),
                ipu_config_json=json.dumps(ipuof.ipu_config(part, state, g)) if ipu_configs else "",
            )
            for g in gcds
        ],
    )


def allocation(alloc: Allocation, pod: PodConfig) -> p.Allocation:
    return p.Allocation(
        name=alloc.name,
        agents=alloc.agents,
        users=alloc.users,
        ipus=len(alloc.agents) * pod.machine.ipus,
        created_at=alloc.created_at,
        create_time=timestamp(alloc.created_at) if alloc.created_at else None,  # the default one of a Pod with none
    )


def ipu(status: IpuStatus, machine_stats: dict | None = None) -> p.Ipu:
    """`machine_stats`: the machine's stats(), from its actor or (--ray off, "actor": False) from the steps of the
    job on it."""
    utilisation, sram_used = ipu_reading(machine_stats, status.ipu, status.working)
    return p.Ipu(
        utilization=utilisation,
        sram_used_bytes=sram_used,
        emulated=machine_stats is not None and machine_stats.get("actor", True),
        id=status.ipu,
        machine=status.machine,
        index=status.index,
        ild=status.ild,
        agent=status.agent or "",
        state=status.state,
        partition=status.partition or "",
    )


def machine(status: MachineStatus, machine_stats: dict | None = None) -> p.Machine:
    """`machine_stats`: as ipu()'s; its utilisation is its IPUs' mean, as ListIpus gives each."""
    busy = sum(ipu_reading(machine_stats, i, True)[0] for i in status.working) if machine_stats else 0.0
    return p.Machine(machine=status.machine, ild=status.ild, agent=status.agent or "", name=status.name,
                     ipus=status.ipus, idle=status.idle, allocated=status.allocated, draining=status.draining,
                     drained=status.drained, failed=status.failed, utilization=busy / max(1, status.ipus),
                     partitions=status.partitions, state=status.state, reason=reason(status.reason),
                     completing=status.completing)


def agent(x: Agent | AgentView, topology: Topology) -> a.Agent:
    """An agent with its state (agent_states.py); a record alone is one no partition holds (created, removed)."""
    view = x if isinstance(x, AgentView) else AgentView(x, agent_state(x.state != ONLINE, False), (), ())
    ag = view.agent
    return a.Agent(
        name=ag.name,
        host=ag.host,
        port=ag.port,
        machine=ag.machine,
        state=view.state,
        ipus=list(topology.machine_ipus(ag.machine)),
        created_at=ag.created_at,
        create_time=timestamp(ag.created_at),
        reason=reason(ag.reason),
        partitions=view.partitions,
        jobs=view.jobs,
    )


def reason(r: Reason | None) -> p.Reason | None:
    return None if r is None else p.Reason(text=r.text, user=r.user, time=timestamp(r.at))


def cluster(c: Cluster) -> a.Cluster:
    return a.Cluster(
        name=c.name,
        agents=c.agents,
        num_ilds=c.num_ilds,
        topology=c.topology,
        cluster_topology=c.cluster_topology,
        created_at=c.created_at,
        create_time=timestamp(c.created_at),
    )


def user(u: User) -> a.User:
    return a.User(name=u.name, admin=u.admin, created_at=u.created_at, create_time=timestamp(u.created_at),
                  unix_user=u.unix_user or "")
