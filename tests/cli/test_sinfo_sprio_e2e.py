"""`vipu info` takes sinfo's -N, -s and -o (IPU-Machines as nodes, V-IPU allocations as partitions) and `vipu
priority` sprio's -j, -u, -o, -l and -h, against a live controller."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, submit, wait_for
from tests.cli.test_squeue_e2e import refused
from vipu.partition.node_names import hostlist


def out(server, command: str, *args: str) -> list[str]:
    done = run(server, "vipu", command, *args)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def machines_of(server, job: int) -> list[str]:
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    return sorted({i["agent"] for i in ipus if i["partition"] == f"slurm_{job}"})


def test_machines_as_sinfo_nodes(server):
    assert run(server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag14,ag15").returncode == 0
    [fill] = submit(server, "--name", "fill", "--ipus", "16", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[fill]["job_state"] == ["RUNNING"])
    busy = machines_of(server, fill)
    assert len(busy) == 4 and "ag13" not in busy  # where best fit put it: a whole aligned block of machines
    nodes = out(server, "info", "-N")
    assert nodes[0] == "NODELIST  NODES PARTITION STATE " and len(nodes) == 17
    want = {f"ag{n:02d}": ("default*", "alloc" if f"ag{n:02d}" in busy else "idle") for n in range(14)}
    want.update({"ag14": ("a1", "idle"), "ag15": ("a1", "idle")})
    assert nodes[1:] == [f"{m}          1 {p:<9} {t:<6}" for m, (p, t) in want.items()]  # by partition, then name
    assert out(server, "info", "-s") == ["PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T)  NODELIST",
                                         "default*     up   infinite        4/10/0/14  ag[00-13]",
                                         "a1           up   infinite          0/2/0/2  ag[14-15]"]
    summary = json.loads(run(server, "vipu", "info", "-s", "--json").stdout)  # -s's lines, not every machine
    assert [(s["partition"], s["nodes"], s["nodelist"]) for s in summary["partitions"]] == [
        ("default", {"allocated": 4, "idle": 10, "other": 0, "total": 14}, "ag[00-13]"),
        ("a1", {"allocated": 0, "idle": 2, "other": 0, "total": 2}, "ag[14-15]")] and list(summary) == ["partitions"]

    assert run(server, "vipu-admin", "fail", "ipus", "63").returncode == 0  # one IPU of ag15
    assert run(server, "vipu-admin", "drain", "agent", "ag13", "--reason", "fan").returncode == 0
    idle = hostlist(m for m in want if m not in busy and m < "ag13")
    lines = {"allocated": f"default|allocated|4|{hostlist(busy)}|16/0/0/16|4/0|4/0/0/4|4",
             "idle": f"default|idle|9|{idle}|0/36/0/36|0/9|0/9/0/9|4"}
    first = sorted(lines, key=lambda state: min(busy) if state == "allocated" else "ag00")  # in node order
    assert out(server, "info", "-h", "-o", "%R|%T|%D|%N|%C|%A|%F|%c") == [lines[k] for k in first] + [
        "default|drained|1|ag13|0/0/4/4|0/0|0/0/1/1|4", "a1|idle|1|ag14|0/4/0/4|0/1|0/1/0/1|4",
        "a1|mixed|1|ag15|0/3/1/4|0/0|0/0/1/1|4"]  # ag15's failed IPU: not whole, its 3 others idle (other in %F)
    counts = {"allocated": "default*   4 alloc", "idle": "default*   9 idle"}
    assert out(server, "info", "-h", "-o", "%P %.3D %t") == [counts[k] for k in first] + [
        "default*   1 drain", "a1   1 idle", "a1   1 mix"]
    assert out(server, "info", "-h", "-p", "a1", "-o", "%R %D %t") == ["a1 1 idle", "a1 1 mix"]
    assert out(server, "info", "-h", "-t", "DRAIN", "-o", "%N") == ["ag13"]  # drain: draining or drained
    assert out(server, "info", "-h", "-t", "drain,idle", "-p", "a1", "-o", "%N") == ["ag14"]
    assert out(server, "info", "-s", "-h", "-p", "a1") == ["a1           up   infinite          0/1/1/2  ag[14-15]"]
    assert out(server, "info", "-h", "-n", "ag[13-14],ag15", "-o", "%N %t") == ["ag13 drain", "ag14 idle", "ag15 mix"]
    assert refused(server, "info", "-n", "ag[15-17]") == ("vipu: error: -n/--nodes names ag[16-17], which are no"
                                                         " IPU-Machines of this Pod; `vipu info -N` lists them")
    assert out(server, "info", "-p", "a1")[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE",
                                                          "NODELIST"]  # sinfo's own default format
    data = json.loads(run(server, "vipu", "info", "-N", "--json").stdout)
    assert data["ilds"][0]["failed"] == 1 and len(data["nodes"]) == 16
    why = data["nodes"][15].pop("reason")  # what failed it, who asked and when (`vipu info -R`)
    assert (why["text"], why["user"]) == ("vipu-admin fail ipus", "root") and data["nodes"][13]["reason"]["text"] == "fan"
    assert data["nodes"][15] == {"name": "ag15", "partition": "a1", "state": "mixed", "ipus": 4,
                                 "idle": 3, "allocated": 0, "completing": 0, "draining": 0, "drained": 0,
                                 "failed": 1}
    assert out(server, "info")[0].split("|")[0].strip() == "ILD"  # without sinfo's options: by IPU-Link domain
    [one] = submit(server, "--ipus", "1", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[one]["job_state"] == ["RUNNING"])
    [machine] = machines_of(server, one)
    assert f"{machine} mix 1/3/0/4" in out(server, "info", "-N", "-h", "-o", "%N %t %C")  # one IPU of four in use


@pytest.mark.parametrize(("command", "args", "said"), [
    ("info", ["-o", "%P %Z"], "vipu: error: -o/--format: %Z is not a field here; use one of %A %a %C %c"),
    ("info", ["-N", "-o", "%N %x"], "vipu: error: -o/--format: %x is not a field here"),
    ("info", ["-t", "busy"], "vipu: error: -t/--states: 'busy' is not a node state here; give some of alloc"),
    ("info", ["-p", ""], "vipu: error: -p/--partition is empty"),
    ("priority", ["-w"], "vipu: error: -w/--weights: the controller does not report its priority weights"),
    ("priority", ["-o", "%i %a"], "vipu: error: -o/--format: %a is not a field here; use one of %A %B"),
    ("priority", ["-l", "-o", "%i"], "vipu: error: -o/--format and -l/--long both given"),
    ("priority", ["-j", "x"], "vipu: error: -j/--jobs: 'x' is not a job id"),
    ("priority", ["-j", "1,x"], "vipu: error: -j/--jobs: 'x' is not a job id"),
])
def test_a_bad_format_is_one_line_naming_the_flag_and_exit_2(unchanged_server, command, args, said):
    assert refused(unchanged_server, command, *args).startswith(said)


def test_priorities_as_sprio_shows_them(server):
    [fill] = submit(server, "--ipus", "64", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[fill]["job_state"] == ["RUNNING"])
    [bob] = submit(server, "--ipus", "16", "--time-limit", "10m", "--user", "bob", "--qos", "high")
    array = submit(server, "--ipus", "1", "--time-limit", "10m", "--user", "carol", "--array", "0-1")[0]
    factors = {r["job_id"]: r for r in json.loads(run(server, "vipu", "priority", "--json").stdout)}
    assert set(factors) == {bob, array, array + 1}
    got = out(server, "priority", "-o", "%.6i %u %Y %A %F %J %Q %N", "-j", str(bob))
    b = factors[bob]
    assert got == [" JOBID USER PRIORITY AGE FAIRSHARE JOBSIZE QOS NICE",
                   f"{bob:>6} bob {b['priority']:.0f} {b['age']:.0f} {b['fairshare']:.0f} {b['job_size']:.0f}"
                   f" {b['qos']:.0f} {b['nice']:.0f}"]
    assert out(server, "priority", "-h", "-o", "%i", "-u", "carol") == [f"{array}_0", f"{array}_1"]
    # a user the controller knows nothing of: squeue's and sprio's "Invalid user" line, and the others listed
    named = run(server, "vipu", "priority", "-h", "-o", "%i", "-u", "nobody,carol")
    assert (named.returncode, named.stdout.split()) == (0, [f"{array}_0", f"{array}_1"])
    assert named.stderr == ("vipu: warning: -u/--user: no user 'nobody' is known to the controller (squeue: Invalid"
                            " user: nobody); check the name\n")
    assert run(server, "vipu", "priority", "-u", "bob").stderr == ""  # known: no pending job is no warning
    assert out(server, "priority", "-h", "-o", "%i", "--jobs", f"{array}_1,{bob}") == [str(bob), f"{array}_1"]
    assert out(server, "priority", "-h", "-o", "%i|%r|%o|%n|%S|%T", "-j", str(bob)) == [f"{bob}|default||high|0|"]
    long = out(server, "priority", "-l")
    assert long[0].split() == ["JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE", "ASSOC",
                               "FAIRSHARE", "JOBSIZE", "PARTITION", "QOSNAME", "QOS", "NICE", "TRES"]
    assert [line.split()[0] for line in long[1:]] == [str(bob), f"{array}_0", f"{array}_1"]  # highest first
    assert len(out(server, "priority", "-h")) == 3  # the table vipu priority has always printed, headless
