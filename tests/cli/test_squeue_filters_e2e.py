"""squeue's filters by field (-n, -p, -q, -A, -w), its SQUEUE_* input variables and `-o %all`, as man squeue and
src/squeue/opts.c (SchedMD/slurm) read them: each narrows, a flag wins over its variable."""

from __future__ import annotations

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import lines
from vipu.partition.node_names import expand


def test_names_qos_accounts_and_partitions_narrow_and_their_variables_stand_in_for_them(server):
    [a] = submit(server, "--ipus", "1", "--hold", "-J", "train", "-q", "high", "-A", "research")
    [b] = submit(server, "--ipus", "1", "--hold", "-J", "eval", "-q", "low")
    [c] = submit(server, "--ipus", "1", "--hold", "-J", "train", "-q", "low")
    ids = ["-h", "-o", "%i"]
    assert lines(server, *ids, "-n", "train") == [str(a), str(c)]
    assert lines(server, *ids, "--name=train,eval", "-q", "low") == [str(b), str(c)]
    assert lines(server, *ids, "-A", "research") == [str(a)]
    assert lines(server, *ids, "-p", "default", "-n", "eval") == [str(b)]
    assert lines(server, *ids, "-p", "elsewhere") == []
    env = server.env() | {"SQUEUE_NAMES": "train", "SQUEUE_QOS": "low"}
    assert lines(server, *ids, env=env) == [str(c)]
    assert lines(server, *ids, "-n", "eval", env=env) == [str(b)]  # the flag wins over SQUEUE_NAMES
    assert lines(server, *ids, env=server.env() | {"SQUEUE_STATES": "R"}) == []
    out = run(server, "vipu", "queue", *ids, env=server.env() | {"SQUEUE_USERS": "nobody"})
    assert out.returncode == 0 and out.stdout == "" and out.stderr.startswith("vipu: warning: SQUEUE_USERS: no user")
    assert len(lines(server, *ids, "-t", "PD", env=server.env() | {"SQUEUE_STATES": "R"})) == 3
    bad = run(server, "vipu", "queue", env=server.env() | {"SQUEUE_STATES": "RUNNNING"})
    assert bad.returncode == 2 and bad.stderr.startswith("vipu: error: SQUEUE_STATES: 'RUNNNING' is not a job state")


def test_nodelist_lists_the_jobs_running_on_those_machines_and_all_prints_every_field(server):
    [job] = submit(server, "--ipus", "1", "--time-limit", "5m", "--duration", "1m")
    wait_for(lambda: show(server, job)["state"] == "RUNNING")
    [node] = lines(server, "-h", "-o", "%N", "-j", str(job))
    assert lines(server, "-h", "-o", "%i", "-w", node) == [str(job)]
    assert lines(server, "-h", "-o", "%i", "-w", "nosuch") == []
    header, row = lines(server, "-o", "%all", "-j", str(job))
    assert header.startswith("ACCOUNT|TRES_PER_NODE|END_TIME|") and header.count("|") == row.count("|")
    assert "ll" not in header and f"|{node}|" in row
    out = run(server, "vipu", "queue", "-n", "")
    assert out.returncode == 2 and "-n/--name" in out.stderr


def test_a_host_list_names_each_machine():
    assert expand("ag[00-02,05]") == ["ag00", "ag01", "ag02", "ag05"]
    assert expand("machine3") == ["machine3"]
    assert expand("ag[08-10],gw,r[1-2]n[1-2]") == ["ag08", "ag09", "ag10", "gw", "r1n1", "r1n2", "r2n1", "r2n2"]
