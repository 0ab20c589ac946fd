"""sbatch -w/--nodelist and -x/--exclude: a job runs only where its listed IPU-Machines are (all of them, more when
it needs more: the aligned block of its size around them), never on an excluded one; names that are no node and
lists no one job can hold are refused at submit naming the field; a job kept out by them waits, and the jobs without
either are placed as before. Pod16: 4 machines ag00-ag03 of 4 IPUs each."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.node_requests import SPEC_FIELDS, UPDATE_FIELDS, NodeNames
from vipu.scheduler.policies.base import RESOURCES

from tests.scheduler.builders import POD16, POD64, make, spec

LONG = {"kind": "sleep", "duration": 3000}


def placed(s, job_id: int) -> list[int]:
    job = s.job(job_id)
    return list(range(job.first_ipu, job.first_ipu + job.ipus)) if job.first_ipu is not None else []


@pytest.mark.parametrize(("fields", "ipus"), [
    ({"ipus": 1, "nodelist": "ag02"}, range(8, 12)),  # somewhere on ag02
    ({"ipus": 4, "nodelist": "ag03"}, range(12, 16)),
    ({"ipus": 8, "nodelist": "ag[02-03]"}, range(8, 16)),
    ({"ipus": 8, "nodelist": "ag03"}, range(8, 16)),  # more than listed: the block of 8 around it
    ({"ipus": 16, "nodelist": "ag01"}, range(0, 16)),
    ({"ipus": 4, "exclude": "ag[00-02]"}, range(12, 16)),
    ({"ipus": 1, "nodelist": "machine01"}, range(4, 8)),  # the name vipu info -N gives a machine without agent
])
def test_a_job_runs_only_where_its_nodelist_and_exclude_let_it(fields, ipus):
    s = make()
    [job] = s.submit(spec(**fields), 0)
    s.cycle(0)
    assert s.job(job.id).state is JobState.RUNNING
    assert set(placed(s, job.id)) <= set(ipus)


def test_a_job_whose_nodes_are_busy_waits_for_them_while_others_start_elsewhere():
    s = make(policy="backfill")
    [busy] = s.submit(spec(ipus=4, nodelist="ag00", time_limit=3600, workload=LONG), 0)
    s.cycle(0)
    [wants] = s.submit(spec(ipus=1, nodelist="ag00"), 1)
    [other] = s.submit(spec(ipus=1), 2)
    s.cycle(3)
    assert s.job(wants.id).state is JobState.PENDING and s.job(wants.id).reason == RESOURCES
    assert s.job(wants.id).estimated_start == 3600  # when ag00 frees up
    assert s.job(other.id).state is JobState.RUNNING and not set(placed(s, other.id)) & set(range(4))
    s.cancel([busy.id], 10)
    s.cycle(10)
    assert set(placed(s, wants.id)) <= set(range(4))


@pytest.mark.parametrize(("fields", "said"), [
    ({"nodelist": "ag07"}, "nodelist names ag07, which is no IPU-Machine of this Pod; `vipu info -N` lists the nodes"),
    ({"nodelist": "ipu-m[01-04]"}, "nodelist names ipu-m[01-04], which are no IPU-Machines"),
    ({"ipus": 2, "nodelist": "ag[00-01]"}, "nodelist 'ag[00-01]' names machines that no job of 2 IPUs can hold"
     " together: a job's IPUs are one aligned block (1 machine: ag00, ag01, ...)"),
    ({"ipus": 8, "nodelist": "ag[01-02]"}, "(2 machines: ag[00-01], ag[02-03], ...); name machines of one block, or"
     " ask for more IPUs"),
    ({"ipus": 4, "nodelist": "ag01", "exclude": "ag[00-01]"}, "exclude and nodelist both name ag01"),
    ({"exclude": "ag9"}, "exclude names ag9, which is no IPU-Machine"),
])
def test_a_nodelist_that_can_never_run_is_refused_at_submit_naming_the_field(fields, said):
    s = make()
    with pytest.raises(InvalidArgument) as refused:
        s.submit(spec(**fields), 0)
    assert said in refused.value.message
    assert not s.table.jobs  # nothing queued


def test_a_bad_host_list_is_refused_by_the_spec():
    with pytest.raises(InvalidArgument) as refused:
        make().submit(spec(nodelist="ag[03-01]"), 0)
    assert "nodelist" in refused.value.message and "runs backwards" in refused.value.message


def test_names_follow_the_pods_agents():
    s = make()
    assert s.table.nodes.use({**{f"node{m}": m for m in range(POD16.machines)}})
    [job] = s.submit(spec(ipus=4, nodelist="node2"), 0)
    s.cycle(0)
    assert placed(s, job.id) == list(range(8, 12))
    with pytest.raises(InvalidArgument):
        s.submit(spec(nodelist="ag02"), 1)


def test_a_job_whose_nodes_failed_cannot_run_and_takes_no_reservation():
    s = make(policy="backfill")
    s.fail_ipus([5], 0)
    [stuck] = s.submit(spec(ipus=4, nodelist="ag01"), 1)
    [free] = s.submit(spec(ipus=4), 2)
    s.cycle(3)
    assert s.job(stuck.id).state is JobState.PENDING and s.job(stuck.id).reason == "ReqNodeNotAvail"
    assert s.job(free.id).state is JobState.RUNNING


def test_a_refusal_naming_both_fields_holds_both_at_fault_by_their_api_names():
    """The API names fields (exclude, then nodelist: the message's order); vipu submit says each by its flag."""
    with pytest.raises(InvalidArgument) as refused:
        make().submit(spec(ipus=4, nodelist="ag01", exclude="ag[00-01]"), 0)
    message = refused.value.message
    assert message.startswith("exclude and nodelist both name")
    assert refused.value.violations == (("exclude", message), ("nodelist", message))


HALF = (1 << 32) - 1  # the default allocation holding half of a Pod64: ag[00-07]
DEFAULT = "allocation default, whose nodes are ag[00-07]"


@pytest.mark.parametrize(("fields", "shown", "said"), [
    ({"ipus": 8, "nodelist": "ag03", "exclude": "ag02"}, SPEC_FIELDS,
     "exclude takes ag02 from ag[02-03], the only block of 8 IPUs that holds ag03 (nodelist): exclude only nodes"
     " outside ag[02-03], list nodes of a block of 8 IPUs without ag02, or ask for fewer IPUs"),
    ({"ipus": 8, "nodelist": "ag03", "exclude": "ag02"}, UPDATE_FIELDS,  # an update changes no size
     "ExcNodeList takes ag02 from ag[02-03], the only block of 8 IPUs that holds ag03 (ReqNodeList): exclude only"
     " nodes outside ag[02-03], or list nodes of a block of 8 IPUs without ag02"),
    ({"ipus": 8, "exclude": "ag[00-07]"}, SPEC_FIELDS,
     f"exclude 'ag[00-07]' leaves the job no 8 IPUs of {DEFAULT}: each of its 4 aligned blocks of 8 IPUs (ag[00-01],"
     " ag[02-03], ...) holds an excluded node, and a job's IPUs are one such block: exclude fewer nodes, or name"
     " another allocation (-p)"),
    ({"ipus": 16, "exclude": "ag[01,04]"}, UPDATE_FIELDS,  # nor its allocation
     f"ExcNodeList 'ag[01,04]' leaves the job no 16 IPUs of {DEFAULT}: each of its 2 aligned blocks of 16 IPUs"
     " (ag[00-03], ag[04-07]) holds an excluded node, and a job's IPUs are one such block: exclude fewer nodes"),
    ({"ipus": 4, "nodelist": "ag[08-09]"}, SPEC_FIELDS,
     f"nodelist names ag[08-09], which are not in {DEFAULT}: name nodes of it, or name another allocation (-p)"),
    ({"ipus": 4, "nodelist": "ag09"}, UPDATE_FIELDS, f"ReqNodeList names ag09, which is not in {DEFAULT}: name nodes"
     " of it"),
    ({"ipus": 8, "nodelist": "ag03", "allocation": "a1"}, SPEC_FIELDS,  # the listed node is a1's, its block is not
     "nodelist 'ag03' needs ag[02-03], the only block of 8 IPUs that holds ag03, and ag02 of it is not in allocation"
     " a1, whose nodes are ag[00-01,03]: list nodes of a block inside it, or ask for fewer IPUs"),
])
def test_a_list_that_leaves_no_block_in_the_allocation_says_which_rule_and_the_fix(fields, shown, said):
    job = JobSpec(**spec(**fields))
    capacity = HALF if job.allocation is None else 0xF0FF  # a1: ag[00-01] and ag03
    refusal = NodeNames(POD64).no_block(job, job.allocation or "default", capacity, shown)
    assert refusal.message == said
    assert refusal.violations[0][0] == ("exclude" if said.startswith(("exclude", "Exc")) else "nodelist")
    if " takes " in said:  # it names the other field too: at fault as well
        assert [field for field, _ in refusal.violations] == ["exclude", "nodelist"]
