"""The IPUoF view of a partition: POPLAR_TARGET_OPTIONS, the job's environment, and per-GCD IPU configs.

vipu.md: a full ILD (64 IPUs) gets torus / slidingWindow target options, a smaller one mesh; poprun forwards
IPUOF_VIPU_API_HOST/PORT/PARTITION_ID/GCD_ID to every instance; instanceSize is the IPUs of one GCD.
"""

from __future__ import annotations

import json

import pytest

from vipu.errors import InvalidArgument
from vipu.partition.ipuof import environment, ipu_config, machines, target_options

TARGET_OPTIONS = [
    # pod, size, GCDs, wanted POPLAR_TARGET_OPTIONS
    ("bow-pod64", 64, 1, dict(ipuLinkDomainSize="64", ipuLinkConfiguration="slidingWindow", ipuLinkTopology="torus",
                              gatewayMode="true", instanceSize="64")),
    ("bow-pod64", 16, 1, dict(ipuLinkDomainSize="16", ipuLinkConfiguration="default", ipuLinkTopology="mesh",
                              gatewayMode="false", instanceSize="16")),
    ("bow-pod64", 16, 4, dict(ipuLinkDomainSize="16", ipuLinkConfiguration="default", ipuLinkTopology="mesh",
                              gatewayMode="false", instanceSize="4")),
    ("bow-pod16", 16, 1, dict(ipuLinkDomainSize="16", ipuLinkConfiguration="default", ipuLinkTopology="mesh",
                              gatewayMode="true", instanceSize="16")),
    ("bow-pod256", 128, 2, dict(ipuLinkDomainSize="64", ipuLinkConfiguration="slidingWindow",
                                ipuLinkTopology="torus", gatewayMode="true", instanceSize="64")),
    ("bow-pod256", 256, 16, dict(ipuLinkDomainSize="64", ipuLinkConfiguration="slidingWindow",
                                 ipuLinkTopology="torus", gatewayMode="true", instanceSize="16")),
    ("bow-pod256", 1, 1, dict(ipuLinkDomainSize="1", ipuLinkConfiguration="default", ipuLinkTopology="mesh",
                              gatewayMode="false", instanceSize="1")),
]


@pytest.mark.parametrize("pod_name,size,gcds,want", TARGET_OPTIONS)
def test_poplar_target_options(pod_name, size, gcds, want, scene_factory):
    scene = scene_factory(pod_name).partition("p1", size, num_gcds=gcds)
    partition = scene.ctl.partitions.get("p1")
    assert target_options(partition, scene.state) == want
    env = environment(partition, scene.state, "vipu.example", 8090)
    assert json.loads(env["POPLAR_TARGET_OPTIONS"]) == want


@pytest.mark.parametrize("gcd", [0, 3])
def test_the_environment_poprun_forwards(gcd, scene_factory):
    scene = scene_factory("bow-pod64").partition("p-job", 16, num_gcds=4)
    env = environment(scene.ctl.partitions.get("p-job"), scene.state, "ctl.example", 8090, gcd=gcd)
    assert {k: v for k, v in env.items() if k != "POPLAR_TARGET_OPTIONS"} == {
        "IPUOF_VIPU_API_HOST": "ctl.example",
        "IPUOF_VIPU_API_PORT": "8090",
        "IPUOF_VIPU_API_PARTITION_ID": "p-job",
        "IPUOF_VIPU_API_GCD_ID": str(gcd),
        "IPUOF_VIPU_API_TIMEOUT": "120",
        "IPUOF_LOG_LEVEL": "WARN",
    }
    assert all(isinstance(v, str) for v in env.values()), "environment values are strings"


@pytest.mark.parametrize(
    "pod_name,size,gcds",
    [("bow-pod16", 8, 2), ("bow-pod64", 16, 4), ("bow-pod128", 64, 2), ("bow-pod256", 128, 8), ("bow-pod256", 8, 8)],
)
def test_each_gcds_ipu_config_lists_exactly_its_ipus(pod_name, size, gcds, scene_factory):
    scene = scene_factory(pod_name).partition("pad", 4).partition("p1", size, num_gcds=gcds, reconfigurable=True)
    partition = scene.ctl.partitions.get("p1")
    per_gcd = size // gcds
    seen: list[int] = []
    for gcd in range(gcds):
        config = ipu_config(partition, scene.state, gcd)
        want = list(range(partition.first_ipu + gcd * per_gcd, partition.first_ipu + (gcd + 1) * per_gcd))
        assert [ipu["podIpu"] for ipu in config["ipus"]] == want
        assert [ipu["id"] for ipu in config["ipus"]] == list(range(per_gcd)), "ids count from 0 in each GCD"
        assert sorted(config["ring"]) == want
        for ipu in config["ipus"]:
            assert (ipu["machine"], ipu["machineIpu"]) == divmod(ipu["podIpu"], 4)
            agent = scene.state.agent_of_machine()[ipu["machine"]]
            assert (ipu["ipuofHost"], ipu["ipuofPort"]) == (agent.host, agent.port)
        attributes = config["attributes"]
        assert (attributes["partitionId"], attributes["gcdId"], attributes["numGcds"]) == ("p1", gcd, gcds)
        assert attributes["syncType"] == "c2-compatible"
        assert attributes["instanceSize"] == str(per_gcd)
        assert (attributes["ildRouting"], attributes["gwRouting"]) == ("RINGSWNC", "DEFAULT")
        seen += want
    assert seen == list(partition.ipus), "the GCDs split the partition without gaps or overlaps"


@pytest.mark.parametrize("gcd", [-1, 2])
def test_a_gcd_the_partition_does_not_have_is_refused(gcd, scene_factory):
    scene = scene_factory("bow-pod16").partition("p1", 8, num_gcds=2)
    with pytest.raises(InvalidArgument, match=r"gcd is -?\d+; partition p1 has GCDs 0 to 1"):
        ipu_config(scene.ctl.partitions.get("p1"), scene.state, gcd)


def test_a_non_reconfigurable_partition_syncs_pod_native(scene_factory):
    scene = scene_factory("bow-pod16").partition("p1", 4)
    assert ipu_config(scene.ctl.partitions.get("p1"), scene.state, 0)["attributes"]["syncType"] == "pod-native-default"


def test_machines_lists_each_machine_under_the_partition_with_its_agent(scene_factory):
    scene = scene_factory("bow-pod64").partition("pad", 8).partition("p1", 8).failed([9])
    got = machines(scene.ctl.partitions.get("p1"), scene.state)
    assert [(m["machine"], m["agent"], m["port"]) for m in got] == [(2, "ag02", 8102), (3, "ag03", 8103)]
    assert [(ipu["id"], ipu["index"], ipu["row"], ipu["failed"]) for ipu in got[0]["ipus"]] == [
        (8, 0, 2, False), (9, 1, 2, True), (10, 2, 2, False), (11, 3, 2, False)]


@pytest.mark.parametrize(
    "pod_name,size,gcds",
    [("bow-pod16", 16, 2), ("bow-pod64", 32, 4), ("bow-pod64", 64, 2), ("bow-pod64", 64, 8), ("bow-pod256", 256, 8)],
)
def test_each_gcds_ring_walks_ipu_links(pod_name, size, gcds, scene_factory):
    scene = scene_factory(pod_name).partition("p1", size, num_gcds=gcds)
    partition, topo = scene.ctl.partitions.get("p1"), scene.state.topology
    for gcd in range(gcds):
        ring = ipu_config(partition, scene.state, gcd)["ring"]
        steps = list(zip(ring, ring[1:])) + ([(ring[-1], ring[0])] if len(ring) > 2 else [])
        assert all(topo.linked(a, b) for a, b in steps), f"GCD {gcd}'s ring {ring} leaves the IPU-Links"
