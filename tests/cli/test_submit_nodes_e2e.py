"""sbatch -w/--nodelist and -x/--exclude through `vipu submit` and #SBATCH lines, on a Pod64 (ag00 to ag15): the job
runs on the machines it names, waits for them when they are busy (saying why in `vipu queue`), and a name that is no
node is refused naming the flag."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import lines


def test_nodelist_and_exclude_place_the_job_and_a_blocked_one_says_why(server, tmp_path):
    [on5] = submit(server, "--ipus", "4", "-w", "ag05", "--duration", "5m")
    wait_for(lambda: show(server, on5)["state"] == "RUNNING")
    assert lines(server, "-h", "-o", "%N", "-j", str(on5)) == ["ag05"]
    [wide] = submit(server, "--ipus", "8", "--nodelist=ag04", "--duration", "5m")  # needs ag[04-05]: ag05 is busy
    [away] = submit(server, "--ipus", "4", "-x", "ag[00-14]", "--duration", "5m")
    wait_for(lambda: show(server, away)["state"] == "RUNNING")
    assert lines(server, "-h", "-o", "%N", "-j", str(away)) == ["ag15"]
    assert lines(server, "-h", "-o", "%T %r", "-j", str(wide)) == ["PENDING Resources"]
    assert sorted(lines(server, "-h", "-o", "%n|%x", "-j", f"{wide},{away}")) == ["ag04|", "|ag[00-14]"]  # %n %x
    [listed] = json.loads(run(server, "vipu", "queue", "--json", "-j", str(away)).stdout)["jobs"]
    assert (listed["required_nodes"], listed["excluded_nodes"]) == ("", "ag[00-14]")  # squeue --json's
    out = run(server, "vipu", "submit", "--ipus", "1", "-w", "ag[05,99]", "--duration", "1s")
    assert out.returncode == 2 and "-w/--nodelist" in out.stderr and "ag99, which is no IPU-Machine" in out.stderr
    out = run(server, "vipu", "submit", "--ipus", "8", "-w", "ag03", "-x", "ag02", "--duration", "1s")
    assert (out.returncode, out.stderr) == (2, "vipu: error: -x/--exclude takes ag02 from ag[02-03], the only block of"
                                               " 8 IPUs that holds ag03 (-w/--nodelist): exclude only nodes outside"
                                               " ag[02-03], list nodes of a block of 8 IPUs without ag02, or ask for"
                                               " fewer IPUs\n")
    out = run(server, "vipu", "submit", "--ipus", "4", "-w", "ag01", "-x", "ag[00-01]", "--duration", "1s")
    assert (out.returncode, out.stderr) == (2, "vipu: error: -x/--exclude and -w/--nodelist both name ag01; a job"
                                               " cannot both hold and avoid a machine: leave it out of one\n")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --ipus=8 -w ag[02-03] --hold\ntrue\n")
    [held] = submit(server, str(script))
    assert show(server, held)["spec"]["nodelist"] == "ag[02-03]"
    shown = run(server, "vipu", "show", "job", str(held)).stdout.splitlines()
    assert "ReqNodeList=ag[02-03]" in shown and "ExcNodeList=(null)" in shown  # as scontrol show job
    run(server, "vipu", "cancel", str(on5))
    wait_for(lambda: show(server, wide)["state"] == "RUNNING")
    assert lines(server, "-h", "-o", "%N", "-j", str(wide)) == ["ag[04-05]"]


TIMES = ("StartTime", "EndTime", "TimeLimit", "EligibleTime", "SubmitTime")


def test_nodes_are_ipu_machines_and_a_nodelist_must_fit_them(server):
    """-N 2 is 8 IPUs on a Pod64's 4-IPU machines: the job holds two machines, the block around -w's."""
    [two] = submit(server, "-N", "2", "-w", "ag05", "--duration", "5m")
    wait_for(lambda: show(server, two)["state"] == "RUNNING")
    assert show(server, two)["spec"]["ipus"] == 8
    assert lines(server, "-h", "-o", "%N %D", "-j", str(two)) == ["ag[04-05] 2"]
    shown = run(server, "vipu", "show", "job", str(two)).stdout.splitlines()
    assert "NodeList=ag[04-05]" in shown and "NumNodes=2" in shown  # as scontrol show job
    # as scontrol's: a running job's EndTime is where its time limit ends, and it was eligible when submitted
    times = dict(line.split("=", 1) for line in shown if line.split("=", 1)[0] in TIMES)
    start, end = (datetime.fromisoformat(times[k]) for k in ("StartTime", "EndTime"))
    assert end - start == timedelta(hours=1) and times["TimeLimit"] == "1:00:00"
    assert times["EligibleTime"] == times["SubmitTime"]
    # 2 IPUs of one machine agree with -N 1
    [script] = submit(server, "-N", "1", "--ipus", "2", "-w", "ag07", "--hold", "--wrap", "sleep 300")
    shown = run(server, "vipu", "show", "job", str(script)).stdout.splitlines()
    assert show(server, script)["spec"]["ipus"] == 2
    assert "NodeList=(null)" in shown and "NumNodes=1" in shown and not any(x.startswith("BatchHost=") for x in shown)
    run(server, "vipu", "release", str(script))
    wait_for(lambda: show(server, script)["state"] == "RUNNING")
    shown = run(server, "vipu", "show", "job", str(script)).stdout.splitlines()
    assert {"NodeList=ag07", "NumNodes=1", "BatchHost=ag07"} <= set(shown)
    run(server, "vipu", "cancel", str(script))
    wait_for(lambda: show(server, script)["state"] == "CANCELLED")  # (its 2 IPUs of ag07 held until then)
    out = run(server, "vipu", "submit", "-N", "1", "-w", "ag[00-01]", "--duration", "1s")  # Slurm: -N >= the list
    assert (out.returncode, out.stderr) == (2, "vipu: error: -N/--nodes 1 is fewer than the 2 IPU-Machines"
                                               " -w/--nodelist ag[00-01] names, and a job holds every node listed:"
                                               " give -N 2, or leave -N out (the list's nodes are then the job's"
                                               " size)\n")
    out = run(server, "vipu", "submit", "-N", "2", "--ipus", "4", "--duration", "1s")
    assert (out.returncode, out.stderr) == (2, "vipu: error: -N/--nodes 2 is 8 IPUs (2 IPU-Machines of 4) but --ipus"
                                               " is 4: give one of them\n")
    out = run(server, "vipu", "submit", "-N", "1-2", "--duration", "1s")
    assert out.returncode == 2 and "-N/--nodes: '1-2' is a range" in out.stderr and "-N 1 or -N 2" in out.stderr
    tested = run(server, "vipu", "submit", "-N", "1", "--test-only", "--duration", "1s").stdout
    # sbatch names the nodes: the best fit beside the job on ag[04-05], ag07 being free again
    assert " using 4 IPUs on nodes ag06 in partition default " in tested
    tested = run(server, "vipu", "submit", "--ipus", "1", "--test-only", "--duration", "1s").stdout
    assert " using 1 IPU on nodes ag06 in partition default " in tested


def test_a_nodelist_alone_sizes_the_job_and_sizes_in_nodes_are_refused_in_nodes(server, tmp_path):
    """sbatch -w node[1-4] gets 4 nodes: -w with no -N or --ipus makes the list's nodes the job's size (a flag's or
    a #SBATCH line's); a size asked in nodes that the allocation can never hold is refused in nodes, as sbatch's
    "Requested node configuration is not available"; and sbatch reads no SBATCH_NNODES, so neither does vipu."""
    [four] = submit(server, "-w", "ag[04-07]", "--hold", "--duration", "5m")
    assert show(server, four)["spec"]["ipus"] == 16
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -w ag[08-09] --hold\ntrue\n")
    [two] = submit(server, str(script))
    assert show(server, two)["spec"]["ipus"] == 8
    out = run(server, "vipu", "submit", "-w", "ag[04-06]", "--duration", "1s")
    assert (out.returncode, out.stderr) == (2, "vipu: error: -w/--nodelist ag[04-06] names 3 IPU-Machines, and with"
                                               " no -N or --ipus they are the job's size; a job's IPUs are one aligned"
                                               " block, a power of two of machines: give -N 4 (the block around"
                                               " them), or list 2 or 4\n")
    out = run(server, "vipu", "submit", "-w", "ag[03-04]", "--duration", "1s")  # 2 nodes, but of two blocks of 2
    assert out.returncode == 2 and out.stderr.startswith("vipu: error: -w/--nodelist 'ag[03-04]' names machines"
                                                         " that no job of 8 IPUs can hold together")
    out = run(server, "vipu", "submit", "-w", "ag[04-05]", "-N", "2", "--ipus", "8", "--hold", "--duration", "1s")
    assert out.returncode == 0, out.stderr  # -N as large as the list: taken
    assert run(server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag00,ag01,ag02,ag03").returncode == 0
    for test_only in ((), ("--test-only",)):
        out = run(server, "vipu", "submit", "-N", "8", "-p", "a1", "--duration", "1s", *test_only)
        assert (out.returncode, out.stderr) == (2, "vipu: error: -N/--nodes 8: allocation a1 has 4 nodes (16 IPUs);"
                                                   " give at most -N 4, or name a larger allocation with -p (`vipu"
                                                   " list allocations`)\n")
    out = run(server, "vipu", "submit", "--nodes", "16", "--duration", "1s")  # the default: ag[04-15]
    assert (out.returncode, out.stderr) == (2, "vipu: error: -N/--nodes 16: allocation default (the agents no named"
                                               " allocation holds) has 12 nodes (48 IPUs), whose largest aligned"
                                               " block is 8 nodes (32 IPUs); give at most -N 8, or name a larger"
                                               " allocation with -p (`vipu list allocations`)\n")
    script.write_text("#!/bin/sh\n#SBATCH -N 8 -p a1\ntrue\n")  # a script's -N: in nodes too, at its line
    out = run(server, "vipu", "submit", str(script))
    assert (out.returncode, out.stderr) == (2, f"vipu: error: {script} line 2: #SBATCH -N 8 -p a1: -N/--nodes 8:"
                                               " allocation a1 has 4 nodes (16 IPUs); give at most -N 4, or name a"
                                               " larger allocation with -p (`vipu list allocations`)\n")
    out = run(server, "vipu", "submit", "-w", "ag[00-15]", "--duration", "1s")
    assert (out.returncode, out.stderr) == (2, "vipu: error: -w/--nodelist ag[00-15] (16 nodes): allocation default"
                                               " (the agents no named allocation holds) has 12 nodes (48 IPUs), whose"
                                               " largest aligned block is 8 nodes (32 IPUs); list the nodes of a block"
                                               " of at most 8, or name a larger allocation with -p (`vipu list"
                                               " allocations`)\n")
    out = run(server, "vipu", "submit", "--ipus", "32", "-p", "a1", "--duration", "1s")  # asked in IPUs: said so
    assert out.stderr == "vipu: error: --ipus is 32 but allocation a1 has 16 IPUs; ask for at most 16\n"
    out = run(server, "vipu", "submit", "--ipus", "4", "--hold", "--duration", "1s", "--parsable",
              env={**server.env(), "SBATCH_NNODES": "16"})
    assert out.returncode == 0 and show(server, int(out.stdout))["spec"]["ipus"] == 4  # no sbatch variable
