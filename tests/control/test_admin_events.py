"""The admin's lines of the log (vipu/control/admin_events.py, docs/logging.md "Admin actions"): one per change of
an agent, IPUs, a cluster, an allocation or a user, naming who asked, what and why, whichever path made it."""

from __future__ import annotations

import logging

from vipu.control.callers import Call, serving
from vipu.control.lifecycle import LifecycleLog
from vipu.hardware.pod_files import load_pod
from vipu.partition.admin_records import Reason
from vipu.partition.controller import Controller
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.pod_state import NoJournal
from vipu.partition.rules import job_holder


def lines(caplog) -> list[tuple]:
    """(event, message, fields without time and who) of each vipu.events line so far."""
    got = [(r.fields["event"], r.getMessage(), r.fields) for r in caplog.records if r.name == "vipu.events"]
    caplog.clear()
    return got


def test_each_admin_change_is_one_line_naming_who_what_and_why(caplog):
    pod = load_pod("bow-pod16")
    caplog.set_level(logging.INFO, logger="vipu.events")
    ctl = Controller(pod, LifecycleLog(NoJournal(), (), pod.machine.ipus), lambda: 5.0)
    assert [(e, m) for e, m, _ in lines(caplog)] == [  # the first start's, the controller's own
        ("agent_created", "agents ag[00-03] created (machines 0-3), by controller"),
        ("cluster_created", "cluster cluster0 created (ag[00-03]), by controller")]

    ctl.partitions.create(PartitionRequest(name="slurm_3", size=4, holder=job_holder(3)))  # job 3 on machine 0
    caplog.clear()
    with serving(Call("r-1", "vipu.v1.AdminService/DrainAgent", "ops")):
        ctl.admin.set_agent_state("ag00", "DRAINED", Reason(text="fan replacement", user="ops", at=5.0))
        ctl.admin.set_agent_state("ag01", "DRAINED", Reason(text="PSU", user="ops", at=5.0))
        ctl.partitions.fail_ipus([8, 9], Reason(text="ECC errors", user="ops", at=5.0))
        ctl.partitions.repair_ipus([9])
        ctl.admin.set_agent_state("ag01", "ONLINE")
        ctl.admin.create_user("alice")
        ctl.admin.update_user("alice", "nobody")
        ctl.admin.remove_user("alice")
        ctl.admin.create_allocation("a1", ["ag03"])
        ctl.admin.remove_allocation("a1")
        ctl.admin.remove_agent("ag03")
    got = lines(caplog)
    assert [m for _, m, _ in got] == [
        "agent ag00 drained, DRAINING: slurm_3 still on its IPUs (fan replacement), by ops",
        "agent ag01 drained, DRAINED (PSU), by ops",
        "IPUs 8 9 failed (ECC errors), by ops",
        "IPU 9 repaired, by ops",
        "agent ag01 resumed (was drained), by ops",
        "user alice created, by ops",
        "user alice runs programs as nobody, by ops",
        "user alice removed, by ops",
        "allocation a1 created (ag03), by ops",
        "allocation a1 removed, by ops",
        "agent ag03 removed (machine 3 has no agent now), by ops",
    ]
    drain = got[0][2]
    assert {k: drain[k] for k in ("agent", "machine", "state", "reason", "partitions", "jobs", "by", "request_id")} == {
        "agent": "ag00", "machine": 0, "state": "DRAINING", "reason": "fan replacement", "partitions": ["slurm_3"],
        "jobs": [3], "by": "ops", "request_id": "r-1"}
    assert "key_sha256" not in str(got)  # a user's key hash is never logged

    ctl.partitions.remove("slurm_3", force=True)  # its job ended: the drain is done
    assert [(e, m, f["state"]) for e, m, f in lines(caplog) if e.startswith("agent")] == [
        ("agent_drain_done", "agent ag00 DRAINED, slurm_3 removed: nothing runs on it (fan replacement), by"
                             " controller", "DRAINED")]


def test_the_first_start_names_its_machines_as_one_run_across_digit_widths(caplog):
    pod = load_pod("bow-pod64")  # 16 machines: 0-15, not 0-9,10-15 as names of two widths would be ranged
    caplog.set_level(logging.INFO, logger="vipu.events")
    Controller(pod, LifecycleLog(NoJournal(), (), pod.machine.ipus), lambda: 5.0)
    assert lines(caplog)[0][:2] == ("agent_created", "agents ag[00-15] created (machines 0-15), by controller")
