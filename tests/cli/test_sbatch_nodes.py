"""sbatch -N/--nodes: a node is an IPU-Machine, so -N N is N machines' IPUs; a count that is no job's size, a range,
or -N and --ipus that disagree are refused naming the flag (or the script's line) and the fix."""

from __future__ import annotations

import json

import pytest

from vipu.cli.batch_directives import DirectiveError, parse_directives
from vipu.cli.batch_script import BatchError, script_request
from vipu.cli.sbatch_nodes import PodMachines, in_nodes, node_count, sized, sized_by_list
from vipu.client.api_error import ApiError

POD64 = PodMachines(ipus=4, count=16)  # bow-pod64: 16 IPU-Machines of 4 IPUs


def pod(machines: PodMachines = POD64):
    return lambda: machines


def not_asked() -> PodMachines:
    raise AssertionError("the controller was asked for its machines without -N")


@pytest.mark.parametrize(("value", "want"), [("1", 1), ("2", 2), (" 4 ", 4), ("2-2", 2), ("16", 16)])
def test_a_node_count_is_one_number_or_a_range_of_one(value, want):
    assert node_count(value) == want


@pytest.mark.parametrize(("value", "said"), [
    ("1-2", "'1-2' is a range, and a job here has one size (its IPUs one block): give one count, e.g. -N 1 or -N 2"),
    ("0", "'0': a job needs at least 1 IPU-Machine (for fewer IPUs give --ipus 1 or 2)"),
    ("two", "'two' is not a count of IPU-Machines; give a whole number, e.g. -N 2"),
    ("2:4", "'2:4' is not a count of IPU-Machines"),
])
def test_a_count_that_is_no_size_is_refused_with_the_fix(value, said):
    with pytest.raises(ValueError) as refused:
        node_count(value)
    assert str(refused.value).startswith(said)


@pytest.mark.parametrize(("options", "machines", "want"), [
    ({"nodes": "2", "name": "n"}, POD64, {"ipus": 8, "name": "n"}),
    ({"nodes": 1}, POD64, {"ipus": 4}),
    ({"nodes": "2"}, PodMachines(ipus=2, count=8), {"ipus": 4}),  # a Pod of 2-IPU machines
    ({"nodes": "2", "ipus": 8}, POD64, {"ipus": 8}),  # both, agreeing
    ({"nodes": "1", "ipus": 1}, POD64, {"ipus": 1}),  # a block smaller than a machine lies on one
    ({"nodes": "1", "ipus": 2}, POD64, {"ipus": 2}),
    ({"nodes": "16-16"}, POD64, {"ipus": 64}),
])
def test_nodes_are_the_machines_ipus(options, machines, want):
    assert sized(options, pod(machines)) == want


def test_without_nodes_the_controller_is_not_asked():
    assert sized({"ipus": 4}, not_asked) == {"ipus": 4}


@pytest.mark.parametrize(("options", "said"), [
    ({"nodes": "2", "ipus": 4}, "-N/--nodes 2 is 8 IPUs (2 IPU-Machines of 4) but --ipus is 4: give one of them"),
    ({"nodes": "1", "ipus": 8}, "-N/--nodes 1 is 4 IPUs (1 IPU-Machine of 4) but --ipus is 8: give one of them"),
    ({"nodes": "3"}, "-N/--nodes 3: a job's IPUs are one aligned block, a power of two of IPU-Machines (1 to 16 on"
     " this Pod of 16 machines of 4 IPUs): give -N 2 or -N 4"),
    ({"nodes": "32"}, "-N/--nodes 32: a job's IPUs are one aligned block, a power of two of IPU-Machines (1 to 16"
     " on this Pod of 16 machines of 4 IPUs): give -N 16"),
    ({"nodes": "1-4"}, "-N/--nodes: '1-4' is a range"),
    ({"nodes": "2", "nodelist": "ag[00-02]"}, "-N/--nodes 2 is fewer than the 3 IPU-Machines -w/--nodelist"
     " ag[00-02] names, and a job holds every node listed: give -N 4, or leave -N out"),
])
def test_nodes_that_are_no_size_or_disagree_with_ipus_are_refused_naming_both(options, said):
    with pytest.raises(ValueError) as refused:
        sized(options, pod())
    assert str(refused.value).startswith(said)


def test_a_directive_gives_nodes_and_a_range_is_refused_at_its_line():
    assert parse_directives("#!/bin/sh\n#SBATCH -N 2\n#SBATCH --nodes=4-4\ntrue\n", "job.sh") == {"nodes": 4}
    with pytest.raises(DirectiveError) as refused:
        parse_directives("#!/bin/sh\n#SBATCH --nodes=1-2\ntrue\n", "job.sh")
    assert str(refused.value).startswith("job.sh line 2: #SBATCH --nodes=1-2: '1-2' is a range")


def spec_of(script: str, flags: dict, machines=pod()) -> dict:
    return json.loads(script_request(script.encode(), "job.sh", [], flags, "r1", machines).spec)


def test_a_scripts_nodes_are_its_ipus_and_the_command_lines_size_wins():
    script = "#!/bin/sh\n#SBATCH -N 2\ntrue\n"
    assert spec_of(script, {})["ipus"] == 8
    assert spec_of(script, {"ipus": 4}, not_asked)["ipus"] == 4  # --ipus 4 (or -N 1) on the command line
    assert spec_of("#!/bin/sh\n#SBATCH --ipus=16\ntrue\n", {"ipus": 8})["ipus"] == 8


def test_a_scripts_nodes_are_checked_against_the_nodelist_the_job_gets():
    """A -w flag replaces the script's list before -N is checked against it, as sbatch applies its flags first."""
    script = "#!/bin/sh\n#SBATCH -N 1\n#SBATCH -w ag[00-01]\ntrue\n"
    assert spec_of(script, {"nodelist": "ag05"})["ipus"] == 4
    with pytest.raises(BatchError, match=r"^job.sh line 2: #SBATCH -N 1: -N/--nodes 1 is fewer than the 2"
                                         r" IPU-Machines -w/--nodelist ag\[00-01\] names"):
        spec_of(script, {})


def test_a_scripts_nodes_and_ipus_that_disagree_are_refused_at_the_line():
    origins: dict[str, str] = {}
    with pytest.raises(BatchError) as refused:
        script_request(b"#!/bin/sh\n#SBATCH -N 2 --ipus=4\ntrue\n", "job.sh", [], {}, "r1", pod(), origins)
    assert str(refused.value) == ("job.sh line 2: #SBATCH -N 2 --ipus=4: -N/--nodes 2 is 8 IPUs (2 IPU-Machines of 4)"
                                  " but --ipus is 4: give one of them")


def test_a_refusal_of_the_ipus_nodes_made_names_the_nodes_line():
    origins: dict[str, str] = {}
    script_request(b"#!/bin/sh\n#SBATCH -J n\n#SBATCH -N 1\ntrue\n", "job.sh", [], {}, "r1", pod(), origins)
    assert origins["ipus"] == "job.sh line 3: #SBATCH -N 1"


@pytest.mark.parametrize(("options", "want"), [
    ({"nodelist": "ag[04-07]"}, {"nodelist": "ag[04-07]", "ipus": 16}),  # sbatch -w node[1-4]: 4 nodes
    ({"nodelist": "ag05,ag05"}, {"nodelist": "ag05,ag05", "ipus": 4}),  # a node named twice is one node
    ({"nodelist": "ag05", "ipus": 16}, {"nodelist": "ag05", "ipus": 16}),  # a size given: the list does not size
    ({"nodelist": "ag[05"}, {"nodelist": "ag[05"}),  # a list that cannot be read: the controller names it
])
def test_a_nodelist_alone_is_the_jobs_size(options, want):
    assert sized_by_list(options, pod()) == want


def test_a_nodelist_of_no_size_is_refused_with_the_block_around_it():
    with pytest.raises(ValueError) as refused:
        sized_by_list({"nodelist": "ag[01-03]"}, pod(), "job.sh line 2: #SBATCH -w ag[01-03]: -w/--nodelist")
    assert str(refused.value) == ("job.sh line 2: #SBATCH -w ag[01-03]: -w/--nodelist ag[01-03] names 3 IPU-Machines,"
                                  " and with no -N or --ipus they are the job's size; a job's IPUs are one aligned"
                                  " block, a power of two of machines: give -N 4 (the block around them), or list 2"
                                  " or 4")
    assert spec_of("#!/bin/sh\n#SBATCH -w ag[02-03]\ntrue\n", {})["ipus"] == 8  # a script's -w alone


def refusal(**figures: str) -> ApiError:
    import grpc

    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "ipus is 64 but ...", (("spec.ipus", ""),),
                    None, True, figures)


@pytest.mark.parametrize(("figures", "said"), [
    ({"allocation": "a1", "allocation_ipus": "16", "largest_ipus": "16", "ipus_per_machine": "4"},
     "-N/--nodes 16: allocation a1 has 4 nodes (16 IPUs); give at most -N 4, or name a larger allocation with -p"
     " (`vipu list allocations`)"),
    ({"allocation": "default", "allocation_ipus": "12", "largest_ipus": "4", "ipus_per_machine": "4"},
     "-N/--nodes 16: allocation default (the agents no named allocation holds) has 3 nodes (12 IPUs), whose largest"
     " aligned block is 1 node (4 IPUs); give at most -N 1, or name a larger allocation with -p (`vipu list"
     " allocations`)"),
    ({}, "ipus is 64 but ..."),  # another refusal, or an older controller's: as it is
    ({"allocation": "a1", "allocation_ipus": "0", "largest_ipus": "0", "ipus_per_machine": "4"}, "ipus is 64 but ..."),
])
def test_a_size_asked_in_nodes_is_refused_in_nodes(figures, said):
    assert in_nodes(64)(refusal(**figures)).message == said


A1 = {"allocation": "a1", "allocation_ipus": "16", "largest_ipus": "16", "ipus_per_machine": "4"}


@pytest.mark.parametrize(("script", "said"), [
    ("#SBATCH -N 16", "job.sh line 2: #SBATCH -N 16: -N/--nodes 16: allocation a1 has 4 nodes (16 IPUs); give at most"
     " -N 4, or name a larger allocation with -p (`vipu list allocations`)"),  # as the flag's, at its line
    ("#SBATCH -w ag[00-15]", "job.sh line 2: #SBATCH -w ag[00-15]: -w/--nodelist ag[00-15] (16 nodes): allocation a1"
     " has 4 nodes (16 IPUs); list the nodes of a block of at most 4, or name a larger allocation with -p (`vipu list"
     " allocations`)"),
    ("#SBATCH -N 16 --ipus 64", None),  # asked in IPUs too: said in IPUs, as the controller says it
    ("#SBATCH --ipus 64", None),
])
def test_a_scripts_size_in_nodes_is_refused_in_nodes_at_its_line(script, said):
    rewords: list = []
    script_request(f"#!/bin/sh\n{script}\ntrue\n".encode(), "job.sh", [], {}, "r1", pod(), {}, rewords)
    assert [reword(refusal(**A1)).message for reword in rewords] == ([said] if said else [])


def test_a_nodelist_flag_alone_sizes_a_script_in_nodes():
    rewords: list = []
    script_request(b"#!/bin/sh\ntrue\n", "job.sh", [], {"nodelist": "ag[00-15]"}, "r1", pod(), {}, rewords)
    assert [reword(refusal(**A1)).message for reword in rewords] == [
        "-w/--nodelist ag[00-15] (16 nodes): allocation a1 has 4 nodes (16 IPUs); list the nodes of a block of at"
        " most 4, or name a larger allocation with -p (`vipu list allocations`)"]
