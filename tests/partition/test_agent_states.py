"""An agent's state (agent_states.py) as every view reads it: DRAINING while a partition holds some of its IPUs,
DRAINED once none does, ONLINE when resumed; a machine's node state by the same rule; reasons kept and cleared."""

from __future__ import annotations

from collections import Counter

import pytest

from vipu.errors import FailedPrecondition, NotFound
from vipu.partition.admin_records import Reason
from vipu.partition.agent_states import agent_state, agent_views, node_state
from vipu.partition.ipu_status import (completing_mask, completing_nodes, ipu_statuses, machine_state_counts,
                                      machine_statuses)
from vipu.partition.rules import job_holder


@pytest.mark.parametrize("drained, in_use, want", [
    (False, False, "ONLINE"),
    (False, True, "ONLINE"),
    (True, True, "DRAINING"),
    (True, False, "DRAINED"),
])
def test_agent_state(drained, in_use, want):
    assert agent_state(drained, in_use) == want


@pytest.mark.parametrize("out_of_service, held, in_use, failed, completing, want", [
    (False, False, 0, 0, 0, "idle"),
    (False, True, 4, 0, 0, "allocated"),
    (False, True, 3, 1, 0, "allocated"),  # running jobs hold every IPU that works
    (False, True, 2, 0, 0, "mixed"),
    (False, True, 2, 1, 0, "mixed"),
    (False, False, 0, 1, 0, "mixed"),  # a failed IPU, the others idle: not whole, yet taking work (not idle)
    (False, False, 0, 3, 0, "mixed"),
    (False, False, 0, 4, 0, "down"),
    (False, True, 4, 0, 4, "completing"),  # its job's program given KillWait: sinfo's comp
    (False, True, 2, 0, 2, "completing"),  # comp outranks mix and idle, as in slurmctld
    (False, True, 4, 0, 2, "completing"),
    (False, True, 3, 1, 3, "completing"),
    (True, True, 4, 0, 4, "draining"),  # a drained node with a completing job is DRAINING in Slurm too
    (True, True, 4, 0, 0, "draining"),
    (True, True, 2, 0, 0, "draining"),  # Slurm's drng: a drained node with jobs, mixed or not
    (True, True, 0, 1, 0, "draining"),  # a FAILED partition still holds a failed IPU: the drain waits for it
    (True, False, 0, 1, 0, "drained"),
    (True, False, 0, 4, 0, "down"),
])
def test_node_state(out_of_service, held, in_use, failed, completing, want):
    assert node_state(out_of_service, held, 4, in_use, failed, completing) == want


def test_agent_and_node_views_agree_while_draining_and_after(scene_factory):
    """The regression: the drain answered DRAINED and `vipu-admin list agents` said DRAINED while `vipu info -N` said
    drng and `vipu list ipus` draining. One rule now: DRAINING until the last partition on it goes."""
    scene = scene_factory("bow-pod16").partition("slurm_7", 4, holder=job_holder(7)).partition("p2", 4)
    why = Reason(text="fan replacement", user="root", at=100.0)
    for name in ("ag00", "ag01", "ag02"):
        scene.ctl.admin.set_agent_state(name, "DRAINED", why)
    views = agent_views(scene.state, [scene.state.agents[a] for a in ("ag00", "ag01", "ag02", "ag03")])
    assert [(v.state, v.partitions, v.jobs) for v in views] == [
        ("DRAINING", ("slurm_7",), (7,)), ("DRAINING", ("p2",), ()), ("DRAINED", (), ()), ("ONLINE", (), ())]
    machines = machine_statuses(scene.state)
    assert [m.state for m in machines] == ["draining", "draining", "drained", "idle"]
    assert [m.reason for m in machines] == [why, why, why, None]
    assert [s.state for s in scene.ctl.partitions.ipu_statuses()][:12] == ["draining"] * 8 + ["drained"] * 4

    scene.ctl.partitions.remove("slurm_7", force=True)  # the job ended
    [v0] = agent_views(scene.state, [scene.state.agents["ag00"]])
    assert (v0.state, v0.partitions) == ("DRAINED", ()) and machine_statuses(scene.state, [0])[0].state == "drained"

    scene.ctl.admin.set_agent_state("ag01", "ONLINE")  # resumed under p2: it goes on, and the reason goes
    assert scene.state.agents["ag01"].reason is None
    [v1] = agent_views(scene.state, [scene.state.agents["ag01"]])
    assert v1.state == "ONLINE" and machine_statuses(scene.state, [1])[0].state == "allocated"


def test_a_machine_out_of_service_says_why_its_drain_first_then_its_latest_failure(scene_factory):
    scene = scene_factory("bow-pod16")
    first = Reason(text="ECC errors", user="root", at=10.0)
    later = Reason(text="link flaps", user="ops", at=20.0)
    scene.ctl.partitions.fail_ipus([5], first)
    scene.ctl.partitions.fail_ipus([6], later)
    scene.ctl.partitions.fail_ipus([5], later)  # failed already: it keeps its first reason
    assert scene.state.ipu_failures["5"].reason == first
    assert machine_statuses(scene.state, [1])[0].reason == later
    drain = Reason(text="fan replacement", user="root", at=30.0)
    scene.ctl.admin.set_agent_state("ag01", "DRAINED", drain)
    assert machine_statuses(scene.state, [1])[0].reason == drain


def test_a_machine_is_comp_while_a_run_is_torn_down_on_it_and_mix_with_a_failed_ipu(scene_factory):
    """machine_statuses with the scheduler's teardowns (Slurm's completing jobs): only their machines are comp, and
    only where nothing outranks it; completing_nodes names those, as `vipu info` does."""
    scene = scene_factory("bow-pod16").partition("slurm_7", 8, holder=job_holder(7)).partition("slurm_8", 4,
                                                                                                  holder=job_holder(8))
    first = scene.state.partitions["slurm_7"].first_ipu
    teardown = ((1 << 8) - 1) << first  # slurm_7's 8 IPUs: its program is given KillWait
    machines = machine_statuses(scene.state, None, teardown)
    assert [m.state for m in machines] == ["completing", "completing", "allocated", "idle"]
    assert completing_nodes(scene.state, teardown) == ["ag00", "ag01"]
    scene.ctl.admin.set_agent_state("ag01", "DRAINED", Reason(text="fan", user="root", at=1.0))
    scene.ctl.partitions.fail_ipus([13])
    assert [m.state for m in machine_statuses(scene.state, None, teardown)] == [
        "completing", "draining", "allocated", "mixed"]
    assert completing_nodes(scene.state, teardown) == ["ag00"] and completing_nodes(scene.state, 0) == []


@pytest.mark.parametrize("drained, failed, want", [
    ((), (), {"completing": 2, "allocated": 1, "idle": 1}),
    (("ag03",), (), {"completing": 2, "allocated": 1, "drained": 1}),  # its IPUs idle, yet not idle: drained
    (("ag01",), (13,), {"completing": 1, "draining": 1, "allocated": 1, "mixed": 1}),  # 13: one of ag03's
    ((), (12, 13, 14, 15), {"completing": 2, "allocated": 1, "down": 1}),
])
def test_the_machines_counted_by_state_are_those_machine_statuses_shows(scene_factory, drained, failed, want):
    """vipu_machines{state} counts machine_state_counts, which visits only the machines with an IPU not idle: the
    same counts as every machine's status, as `vipu info -N` lists them."""
    scene = scene_factory("bow-pod16").partition("slurm_7", 8, holder=job_holder(7)).partition("slurm_8", 4,
                                                                                                  holder=job_holder(8))
    teardown = ((1 << 8) - 1) << scene.state.partitions["slurm_7"].first_ipu
    for agent in drained:
        scene.ctl.admin.set_agent_state(agent, "DRAINED", Reason(text="fan", user="root", at=1.0))
    if failed:
        scene.ctl.partitions.fail_ipus(list(failed))
    counts = machine_state_counts(scene.state, teardown)
    assert +counts == want == Counter(m.state for m in machine_statuses(scene.state, None, teardown))


def test_an_ipu_is_completing_where_its_machine_is_comp_and_idle_once_the_run_is_gone(scene_factory):
    """The IPUs of a run still torn down are completing in every IPU view (`vipu list ipus`, `vipu info`, `vipu top`,
    vipu_ipus), by the rule that makes their machine comp: counted apart from allocated, their machine's counts
    still adding up; draining and failed outrank it, as on the node; idle once the job's partition is gone."""
    scene = scene_factory("bow-pod16").partition("slurm_7", 8, holder=job_holder(7)).partition("slurm_8", 4,
                                                                                                  holder=job_holder(8))
    first = scene.state.partitions["slurm_7"].first_ipu
    teardown = ((1 << 8) - 1) << first
    assert completing_mask(scene.state, teardown) == teardown
    assert [s.state for s in ipu_statuses(scene.state, teardown)] == ["completing"] * 8 + ["allocated"] * 4 + [
        "idle"] * 4
    assert [s.state for s in ipu_statuses(scene.state)][:8] == ["allocated"] * 8  # no teardown: its job runs
    counts = [(m.state, m.allocated, m.completing, m.idle) for m in machine_statuses(scene.state, None, teardown)]
    assert counts == [("completing", 0, 4, 0), ("completing", 0, 4, 0), ("allocated", 4, 0, 0), ("idle", 0, 0, 4)]

    scene.ctl.admin.set_agent_state("ag01", "DRAINED", Reason(text="fan", user="root", at=1.0))
    scene.ctl.partitions.fail_ipus([1])
    assert completing_mask(scene.state, teardown) == teardown & ~0b11110010
    assert [s.state for s in ipu_statuses(scene.state, teardown)][:8] == [
        "completing", "failed", "completing", "completing", "draining", "draining", "draining", "draining"]
    assert [(m.state, m.completing, m.draining, m.failed) for m in machine_statuses(scene.state, [0, 1], teardown)] == [
        ("completing", 3, 0, 1), ("draining", 0, 4, 0)]

    scene.ctl.partitions.remove("slurm_7", force=True)  # its program ended: the teardown is done
    assert completing_mask(scene.state, 0) == 0
    assert [s.state for s in ipu_statuses(scene.state, 0)][:8] == ["idle", "failed", "idle", "idle"] + ["drained"] * 4


def test_a_list_of_agents_is_drained_or_resumed_whole_or_not_at_all(scene_factory):
    scene = scene_factory("bow-pod16")
    admin, agents = scene.ctl.admin, scene.state.agents
    why = Reason(text="PSU", user="root", at=1.0)
    with pytest.raises(NotFound, match=r"^agents ag\[08-09\] do not exist \(of the 3 named\), so none was changed;"):
        admin.set_agent_states(["ag00", "ag08", "ag09"], "DRAINED", why)
    assert agents["ag00"].state == "ONLINE"
    assert [a.name for a in admin.set_agent_states(["ag01", "ag00", "ag01"], "DRAINED", why)] == ["ag01", "ag00"]
    with pytest.raises(FailedPrecondition) as refused:
        admin.set_agent_states(["ag00", "ag01", "ag02", "ag03"], "ONLINE")
    assert refused.value.message == (
        "agents ag[02-03] are ONLINE, not drained: resume undoes a drain (`vipu-admin drain agent`), so there is"
        " nothing to resume; none was resumed: resume the drained ones alone, `vipu-admin resume agent ag[00-01]`")
    assert [agents[a].state for a in ("ag00", "ag01")] == ["DRAINED", "DRAINED"]
    admin.set_agent_states(["ag00", "ag01"], "ONLINE")
    assert [(agents[a].state, agents[a].reason) for a in ("ag00", "ag01")] == [("ONLINE", None)] * 2
