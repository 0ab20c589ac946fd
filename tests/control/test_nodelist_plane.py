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
    assert refused.value.message == ("nodelist leaves the job no 1 IPUs of allocation default, whose nodes are"
                                     " ag[00-01]: name nodes of it (or another allocation, -p)")
    with pytest.raises(InvalidArgument, match="exclude leaves the job no 1 IPUs of allocation default"):
        submit(plane, exclude="ag[00-01]")
    assert submit(plane, nodelist="ag02", allocation="a1") == 1


def test_a_job_whose_listed_node_failed_names_that_node_only(plane):
    plane.admin.fail_ipus([0, 4])  # one IPU of ag00 and one of ag01
    job = submit(plane, ipus=4, nodelist="ag01")
    plane.step()
    assert plane.jobs.job(job, ANYONE).reason == "ReqNodeNotAvail, UnavailableNodes:ag01"
    other = submit(plane, ipus=16)
    plane.step()
    assert plane.jobs.job(other, ANYONE).reason == "ReqNodeNotAvail, UnavailableNodes:ag[00-01]"


def test_node_names_follow_the_agents_and_a_waiting_job_reads_them_again(plane):
    plane.admin.remove_agent("ag03")  # machine03 now, as vipu info -N names it
    job = submit(plane, ipus=4, nodelist="machine03")
    plane.step()
    assert plane.jobs.job(job, ANYONE).state.value == "PENDING"  # no agent: no IPU of it takes work
    plane.admin.create_agent("ipu-m03", machine=3)
    assert plane.scheduler.table.nodes.names == {"ag00": 0, "ag01": 1, "ag02": 2, "ipu-m03": 3}
    plane.step()
    assert plane.jobs.job(job, ANYONE).state.value == "PENDING"  # its node's name is gone: it waits
    placed = submit(plane, ipus=4, nodelist="ipu-m03")
    plane.step()
    assert plane.jobs.job(placed, ANYONE).first_ipu == 12
    with pytest.raises(InvalidArgument, match="nodelist names ag03, which is no IPU-Machine of this Pod"):
        submit(plane, nodelist="ag03")
