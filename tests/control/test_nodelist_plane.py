"""sbatch -w through the control plane, in process (Pod16: ag00 to ag03): nodes outside the job's allocation are
refused at submit, a job whose listed node failed says ReqNodeNotAvail naming that node only, and the names follow
the Pod's agents (a waiting job reads them again: a name that is gone holds it back)."""

from __future__ import annotations

import pytest

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.errors import InvalidArgument


def submit(plane, **fields) -> int:
    spec = {"ipus": 1, "time_limit": "10m", "workload": {"kind": "sleep", "duration": "5m"}, **fields}
    [done] = plane.jobs.submit([SubmitRequest(spec, {})], ANYONE)
    return done.jobs[0].id


def test_nodes_outside_the_jobs_allocation_are_refused_at_submit(plane):
    plane.admin.create_allocation("a1", ["ag02", "ag03"], [])
    with pytest.raises(InvalidArgument) as refused:
        submit(plane, nodelist="ag02")
    assert refused.value.message == ("nodelist names ag02, which is not in allocation default, whose nodes are"
                                     " ag[00-01]: name nodes of it, or name another allocation (-p)")
    with pytest.raises(InvalidArgument) as refused:
        submit(plane, exclude="ag[00-01]")
    assert refused.value.message == ("exclude 'ag[00-01]' leaves the job no 1 IPUs of allocation default, whose"
                                     " nodes are ag[00-01], every one excluded: exclude fewer nodes, or name"
                                     " another allocation (-p)")
    assert submit(plane, nodelist="ag02", allocation="a1") == 1


def test_a_job_whose_listed_node_failed_names_that_node_only(plane):
    plane.admin.fail_ipus([0, 4])  # one IPU of ag00 and one of ag01
    job = submit(plane, ipus=4, nodelist="ag01")
    plane.step()
    assert plane.job_views.job(job, ANYONE).reason == "ReqNodeNotAvail, UnavailableNodes:ag01"
    other = submit(plane, ipus=16)
    plane.step()
    assert plane.job_views.job(other, ANYONE).reason == "ReqNodeNotAvail, UnavailableNodes:ag[00-01]"


def test_node_names_follow_the_agents_and_a_waiting_job_reads_them_again(plane):
    plane.admin.remove_agent("ag03")  # machine03 now, as vipu info -N names it
    job = submit(plane, ipus=4, nodelist="machine03")
    plane.step()
    assert plane.job_views.job(job, ANYONE).state.value == "PENDING"  # no agent: no IPU of it takes work
    plane.admin.create_agent("ipu-m03", machine=3)
    assert plane.scheduler.table.nodes.names == {"ag00": 0, "ag01": 1, "ag02": 2, "ipu-m03": 3}
    plane.step()
    assert plane.job_views.job(job, ANYONE).state.value == "PENDING"  # its node's name is gone: it waits
    placed = submit(plane, ipus=4, nodelist="ipu-m03")
    plane.step()
    assert plane.job_views.job(placed, ANYONE).first_ipu == 12
    with pytest.raises(InvalidArgument, match="nodelist names ag03, which is no IPU-Machine of this Pod"):
        submit(plane, nodelist="ag03")


def test_update_req_and_exc_node_list_as_submit_checks_them_for_pending_jobs_only(plane):
    """scontrol update job NodeList= / ExcNodeList=: a pending job's, checked as -w and -x are at submit; a running
    job's are refused (slurmctld: ESLURM_JOB_NOT_PENDING; its IPUs are one block it holds until it ends)."""
    from vipu.errors import FailedPrecondition
    from vipu.scheduler.updates import JobUpdate

    plane.admin.create_allocation("a1", ["ag02", "ag03"], [])
    held = submit(plane, ipus=4, hold=True)

    def update(job, **fields):
        return plane.jobs.update(job, JobUpdate(**fields), False, ANYONE)

    [job] = update(held, nodelist="ag01", exclude="ag00")
    assert (job.spec.nodelist, job.spec.exclude) == ("ag01", "ag00")
    for fields, said in [
        ({"nodelist": "ag07"}, "ReqNodeList names ag07, which is no IPU-Machine of this Pod"),
        ({"nodelist": "ag02"}, "ReqNodeList names ag02, which is not in allocation default, whose nodes are"
                               " ag[00-01]: name nodes of it"),  # an update cannot move the job (no -p)
        ({"exclude": "ag01"}, "ExcNodeList and ReqNodeList both name ag01"),
        ({"exclude": "ag[01"}, "ExcNodeList 'ag[01' has an unmatched bracket"),
    ]:
        with pytest.raises(InvalidArgument) as refused:
            update(held, **fields)
        assert said in refused.value.message and refused.value.violations[0][0] == next(iter(fields))
    [job] = update(held, nodelist="", exclude="ag01")  # "" removes one, as scontrol's
    assert (job.spec.nodelist, job.spec.exclude) == (None, "ag01")
    running = submit(plane, ipus=4)
    plane.step()
    assert plane.job_views.job(running, ANYONE).state.value == "RUNNING"
    for field, name in (("nodelist", "ReqNodeList"), ("exclude", "ExcNodeList")):
        with pytest.raises(FailedPrecondition, match=f"job {running} is RUNNING: {name} can change only while it is"
                                                     " pending"):
            update(running, **{field: "ag00"})


def test_adding_or_removing_an_agent_wakes_the_loop(plane, monkeypatch):
    """Regression: a job waiting for a machine whose agent came back waited for the loop's next wake for another
    reason (16 s in a walk), where a resume or a repair woke it at once."""
    woken = []
    monkeypatch.setattr(plane.loop, "wake", lambda: woken.append(True))
    plane.admin.remove_agent("ag03")
    assert woken == [True]
    plane.admin.create_agent("ag03", machine=3)
    assert woken == [True, True]
