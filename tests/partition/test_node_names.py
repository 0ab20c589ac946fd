"""How IPU-Machines are named as nodes: padded to the Pod's widest machine number (ag000 to ag255 on a Pod1024),
unchanged for a Pod16 to a Pod256 and for a Pod whose agents were stored before; ordered as people read numbers;
and counted by state per machine (ListMachines: `vipu info -N/-s`, the queue's node lists)."""

from __future__ import annotations

import pytest

from vipu.partition.admin_records import Agent
from vipu.partition.ipu_status import ipu_statuses, machine_statuses, machines_spanned, unavailable_nodes
from vipu.partition.node_names import agent_name, hostlist, machine_name, natural_key, ranges
from vipu.partition.rules import job_holder


@pytest.mark.parametrize("machines, first, last", [
    (4, "ag00", "ag03"),  # Pod16: the names it always had
    (64, "ag00", "ag63"),  # Pod256
    (256, "ag000", "ag255"),  # Pod1024
    (16_384, "ag00000", "ag16383"),  # 65,536 IPUs
])
def test_agents_are_padded_to_the_widest_machine_number(machines, first, last):
    assert (agent_name(0, machines), agent_name(machines - 1, machines)) == (first, last)
    assert hostlist(agent_name(m, machines) for m in range(machines)) == f"ag[{first[2:]}-{last[2:]}]"


def test_a_host_list_ranges_numbers_of_one_width_and_keeps_unnumbered_names_whole():
    assert hostlist(["ag03", "ag00", "ag01", "machine9", "ag0100"]) == "ag[00-01,03,0100],machine9"
    assert hostlist(["ag", "ag01", "ag02", "gw", "ag02"]) == "ag,ag[01-02],gw"  # (not ag[,01-02])
    assert hostlist(["ag9", "ag10"]) == "ag[9,10]" and hostlist(["x7"]) == "x7"


def test_numbers_range_across_digit_widths_where_names_do_not():
    assert ranges([15, 3, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]) == "0-15"  # one run, not 0-9,10-15
    assert ranges([99, 100, 7, 7]) == "7,99-100" and ranges([3]) == "3" and ranges([]) == ""
    assert hostlist(["ag9", "ag10"]) == "ag[9,10]"  # names of two widths stay apart (Slurm's hostlist)


def test_a_machine_without_an_agent_is_padded_too():
    assert machine_name(7, 256) == "machine007" and machine_name(7, 4) == "machine07"


def test_names_sort_as_numbers_read():
    names = ["slurm_10", "slurm_2", "b", "slurm_1", "ag100", "ag11", "a10b2", "a10b10", "a9"]
    assert sorted(names, key=natural_key) == ["a9", "a10b2", "a10b10", "ag11", "ag100", "b", "slurm_1", "slurm_2",
                                              "slurm_10"]
    assert sorted(["ag07", "ag7"], key=natural_key) == sorted(["ag7", "ag07"], key=natural_key)  # one order


def test_a_pod1024_registers_padded_agents(scene_factory):
    state = scene_factory("bow-pod1024").state
    assert sorted(state.agents) == [f"ag{m:03d}" for m in range(256)]
    assert scene_factory("bow-pod256").state.agents.keys() == {f"ag{m:02d}" for m in range(64)}


def test_a_pod1024_stored_with_the_old_names_keeps_them(scene_factory):
    """Agents are records: a Pod1024 made before names were padded (ag00 to ag99, then ag100 to ag255) starts again
    with them as stored (allocations and scripts name them), not with new ones beside them."""
    scene = scene_factory("bow-pod1024")
    old = {f"ag{m:02d}": scene.state.agents[f"ag{m:03d}"].model_copy(update={"name": f"ag{m:02d}"})
           for m in range(256)}
    cluster = next(iter(scene.state.clusters.values())).model_copy(update={"agents": list(old)})
    scene.journal.docs = {k: v for k, v in scene.journal.docs.items() if k[0] != "agent"}
    for name, agent in old.items():
        scene.journal.docs[("agent", name)] = agent.model_dump_json()
    scene.journal.docs[("cluster", cluster.name)] = cluster.model_dump_json()
    again = scene.restarted()
    assert sorted(again.state.agents, key=natural_key)[-3:] == ["ag253", "ag254", "ag255"]
    assert len(again.state.agents) == 256 and "ag007" not in again.state.agents
    assert isinstance(again.state.agents["ag100"], Agent)
    listed = again.state.allocation_agents("default")  # `vipu list allocations`: ag9, ag10, ..., not ag10, ag100
    assert listed[9:12] == ["ag09", "ag10", "ag11"] and listed[-1] == "ag255"


def test_each_machine_counts_its_ipus_by_state_as_the_ipus_show_them(scene_factory):
    scene = scene_factory("bow-pod1024").partition("racks", 128).failed([1023, 127])
    scene.ctl.admin.set_agent_state("ag010", "DRAINED")  # machine 10, inside "racks": draining
    scene.ctl.admin.set_agent_state("ag200", "DRAINED")  # idle: drained
    rows = machine_statuses(scene.state)
    statuses = ipu_statuses(scene.state)
    assert len(rows) == 256 and rows[255].name == "ag255"
    for row in rows:
        states = [s.state for s in statuses[row.machine * 4:row.machine * 4 + 4]]
        assert (row.idle, row.allocated, row.draining, row.drained, row.failed) == tuple(
            states.count(k) for k in ("idle", "allocated", "draining", "drained", "failed")), row
    assert (rows[10].draining, rows[31].allocated, rows[31].failed, rows[200].drained) == (4, 3, 1, 4)
    # what `vipu top` marks and colours a rack's machines by, and whose utilisation counts
    assert (rows[31].partitions, rows[31].working, rows[32].partitions, rows[32].working) == (
        ("racks",), (124, 125, 126), (), ())
    assert machine_statuses(scene.state)[255].partitions == () and rows[255].failed == 1
    assert [r.machine for r in machine_statuses(scene.state, machines_spanned([(16, 8), (1020, 1)], 4))] == [
        4, 5, 255]


def test_the_unavailable_nodes_of_an_allocation_are_its_own(scene_factory):
    scene = scene_factory("bow-pod64").allocation("team", ["ag12", "ag13", "ag14", "ag15"]).failed([61])
    scene.ctl.admin.remove_agent("ag03")
    scene.ctl.admin.set_agent_state("ag07", "DRAINED")
    assert unavailable_nodes(scene.state, "default") == ["machine03", "ag07"]
    assert unavailable_nodes(scene.state, "team") == ["ag15"]
    assert unavailable_nodes(scene.state, "gone") == []


def test_partitions_are_listed_in_natural_order(scene_factory):
    """`vipu list partitions` read slurm_1, slurm_10, slurm_100, slurm_2: names now sort as their numbers."""
    scene = scene_factory("bow-pod64")
    for name in ("slurm_10", "slurm_2", "slurm_100", "dev", "slurm_1"):
        job = name.partition("_")[2]
        scene.partition(name, 1, **({"holder": job_holder(int(job))} if job else {}))
    assert [p.name for p in scene.ctl.partitions.list()] == ["dev", "slurm_1", "slurm_2", "slurm_10", "slurm_100"]

