"""The IPU-over-Fabric view of a partition: its machines and IPUs, and the environment a job on it receives.

The environment follows what poprun forwards to every instance (vipu.md, "The job's environment contract").
POPLAR_TARGET_OPTIONS are what a real partition of that size gets: a partition that fills a torus IPU-Link domain
(or spans several) is a torus with sliding-window link configuration and gateway mode; a smaller one is a mesh.
"""

from __future__ import annotations

import json

from vipu.partition.partition_record import GW_ROUTING, ILD_ROUTING, Partition
from vipu.partition.pod_state import PodState

API_TIMEOUT_S = 120  # poprun's --vipu-server-timeout default


def target_options(partition: Partition, state: PodState) -> dict[str, str]:
    pod = state.pod
    whole_ilds = partition.size >= pod.ild_ipus
    torus = whole_ilds and pod.ild_topology == "torus"
    return {
        "ipuLinkDomainSize": str(min(partition.size, pod.ild_ipus)),
        "ipuLinkConfiguration": "slidingWindow" if torus else "default",
        "ipuLinkTopology": "torus" if torus else "mesh",
        "gatewayMode": "true" if whole_ilds else "false",
        "instanceSize": str(partition.ipus_per_gcd),
    }


def environment(partition: Partition, state: PodState, api_host: str, api_port: int, gcd: int = 0) -> dict[str, str]:
    return {
        "IPUOF_VIPU_API_HOST": api_host,
        "IPUOF_VIPU_API_PORT": str(api_port),
        "IPUOF_VIPU_API_PARTITION_ID": partition.name,
        "IPUOF_VIPU_API_GCD_ID": str(gcd),
        "IPUOF_VIPU_API_TIMEOUT": str(API_TIMEOUT_S),
        "IPUOF_LOG_LEVEL": "WARN",
        "POPLAR_TARGET_OPTIONS": json.dumps(target_options(partition, state), separators=(",", ":")),
    }


def machines(partition: Partition, state: PodState) -> list[dict]:
    """Machines under the partition, each with its agent and the IPUs of the partition on it."""
    agents = state.agent_of_machine()
    by_machine: dict[int, list[dict]] = {}
    failed = state.failed_ipus
    for ipu in partition.ipus:
        place = state.topology.place(ipu)
        by_machine.setdefault(place.machine, []).append(
            {"id": ipu, "index": place.index, "ild": place.ild, "row": place.row, "failed": ipu in failed}
        )
    result = []
    for machine, ipus in by_machine.items():
        agent = agents.get(machine)
        result.append(
            {
                "machine": machine,
                "agent": agent.name if agent else "",
                "host": agent.host if agent else "",
                "port": agent.port if agent else 0,
                "ipus": ipus,
            }
        )
    return result


def ipu_config(partition: Partition, state: PodState, gcd: int) -> dict:
    """An IPUoF configuration for one GCD, as `vipu get partition --gcd N --ipu-configs` writes for Poplar."""
    agents = state.agent_of_machine()
    ring = state.topology.ring(partition.first_ipu, partition.size)
    gcd_ipus = set(partition.gcd_ipus(gcd))
    ipus = []
    for ipu in partition.gcd_ipus(gcd):
        place = state.topology.place(ipu)
        agent = agents.get(place.machine)
        ipus.append(
            {
                "id": ipu - partition.gcd_ipus(gcd).start,
                "podIpu": ipu,
                "ipuofHost": agent.host if agent else "",
                "ipuofPort": agent.port if agent else 0,
                "machine": place.machine,
                "machineIpu": place.index,
            }
        )
    return {
        "attributes": {
            "partitionId": partition.name,
            "gcdId": gcd,
            "numGcds": partition.num_gcds,
            "syncType": partition.sync_type,
            "ildRouting": ILD_ROUTING,
            "gwRouting": GW_ROUTING,
            **target_options(partition, state),
        },
        "ipus": ipus,
        "ring": [ipu for ipu in ring if ipu in gcd_ipus],
    }
