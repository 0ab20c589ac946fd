"""squeue's filters by field (-n, -p, -q, -A, -w), its SQUEUE_* input variables and `-o %all`, as man squeue and
src/squeue/opts.c (SchedMD/slurm) read them: each narrows, a flag wins over its variable."""

from __future__ import annotations

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import lines
from tests.jobs.programs.test_programs_e2e import spec_file
from vipu.partition.node_names import expand

# deaf to the SIGTERM of a cancel or a time limit: it ends when the test says, its job COMPLETING until then
DEAF = "#!/bin/bash\ntrap '' TERM\ntouch started.$SLURM_JOB_ID\nwhile [ ! -e stop ]; do sleep 0.05; done\n"


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


def test_a_job_still_completing_is_listed_as_cg_alone_never_under_the_state_it_ended_in(server, tmp_path):
    """squeue keeps COMPLETING as a flag over the state a job ended in, and its -t matches a base state only when the
    job's whole state is that state (src/squeue/print.c, _filter_job): a job cancelled, or timed out, whose program
    is still ending (KillWait) is listed once, as CG, by default, by -t CG and by -t all, and not by -t CA or -t TO;
    once it has ended, under those. Regression (end33): -t CA listed it as CA, and -t all twice, as CG and as CA."""
    [cancelled] = submit(server, spec_file(tmp_path, DEAF, "cancelled"))
    [late] = submit(server, spec_file(tmp_path, DEAF, "late", time_limit="10s"))
    wait_for(lambda: all((tmp_path / f"started.{i}").exists() for i in (cancelled, late)))
    assert run(server, "vipu", "cancel", str(cancelled)).returncode == 0
    wait_for(lambda: show(server, late)["state"] == "COMPLETING", timeout=30)  # its time limit passed

    def rows(*args: str) -> list[str]:
        return lines(server, "-h", "-o", "%i %t", *args)

    completing = [f"{cancelled} CG", f"{late} CG"]
    assert rows() == rows("-t", "CG") == rows("-t", "all") == rows("-t", "CA,TO,CG") == completing
    assert rows("-t", "CA") == rows("-t", "TO") == rows("--states=CANCELLED,TIMEOUT") == []
    (tmp_path / "stop").touch()
    wait_for(lambda: rows("-t", "all") == [f"{cancelled} CA", f"{late} TO"])
    assert (rows("-t", "CA"), rows("-t", "TO"), rows("-t", "CG")) == ([f"{cancelled} CA"], [f"{late} TO"], [])
