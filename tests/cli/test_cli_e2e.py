"""The installed `vipu` and `vipu-admin` console scripts against a live controller, as a user runs them."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request

import pytest

from tests.cli_forks import run_script
from tests.conftest import console_script


def run(server, *args: str, env=None) -> subprocess.CompletedProcess:
    """The command as a user types it (`server` None: a command that needs none), in the test's own folder (the
    server's state folder's parent): a batch script's default slurm-N.out lands there, not in the repository,
    where a later test's job of the same id would find it and refuse to write over it."""
    prog, *rest = args
    return run_script(console_script(prog), rest, env=env or server.env(), timeout=60,
                      cwd=server.state_dir.parent if server else None)


def test_server_version_names_version_and_host(unchanged_server):
    out = run(unchanged_server, "vipu", "--server-version")
    assert out.returncode == 0, out.stderr
    assert "version: 0.1.0" in out.stdout
    assert f"host: 127.0.0.1:{unchanged_server.port}" in out.stdout


@pytest.mark.parametrize(("flags", "expected"), [
    (["--host", "0.0.0.0"], socket.gethostname()),  # 0.0.0.0 reaches nobody: a job would dial its own host
    (["--host", "0.0.0.0", "--advertise-host", "ctl.example"], "ctl.example"),
    ([], "127.0.0.1"),
])
def test_jobs_are_given_an_address_they_can_dial(server_factory, flags, expected):
    server = server_factory(extra=flags)
    assert run(server, "vipu", "create", "partition", "p1", "--size", "1").returncode == 0
    view = json.loads(run(server, "vipu", "get", "partition", "p1", "--json").stdout)
    assert view["gcds"][0]["environment"]["IPUOF_VIPU_API_HOST"] == expected


def test_partition_lifecycle_through_the_cli(server):
    created = run(server, "vipu", "create", "partition", "p16", "--size", "16", "--json")
    assert created.returncode == 0, created.stderr
    part = json.loads(created.stdout)
    assert part["size"] == 16 and part["state"] == "ACTIVE" and part["ipus"] == list(range(16))

    assert run(server, "vipu", "create", "partition", "p4", "--size", "4", "--num-gcds", "2", "--reconfigurable").returncode == 0
    table = run(server, "vipu", "list", "partitions").stdout.splitlines()
    assert table[0].split("|")[0].strip() == "Partition"
    assert [line.split("|")[0].strip() for line in table[1:]] == ["p4", "p16"]  # natural order, as numbers read

    view = json.loads(run(server, "vipu", "get", "partition", "p4", "--json").stdout)
    assert view["partition"]["sync_type"] == "c2-compatible"
    assert [g["environment"]["IPUOF_VIPU_API_GCD_ID"] for g in view["gcds"]] == ["0", "1"]
    env = view["gcds"][0]["environment"]
    assert env["IPUOF_VIPU_API_PARTITION_ID"] == "p4" and env["IPUOF_VIPU_API_PORT"] == str(server.port)
    assert json.loads(env["POPLAR_TARGET_OPTIONS"])["instanceSize"] == "2"

    configs = run(server, "vipu", "get", "partition", "p4", "--gcd", "1", "--ipu-configs")
    assert json.loads(configs.stdout)["attributes"]["gcdId"] == 1

    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert sum(1 for i in ipus if i["state"] == "allocated") == 20
    assert run(server, "vipu", "reset", "partition", "p4").returncode == 0
    removed = run(server, "vipu", "remove", "partition", "p16")
    assert removed.returncode == 0 and "16 IPUs freed" in removed.stdout
    one = run(server, "vipu", "create", "partition", "p1", "--size", "1")
    assert one.returncode == 0 and "created: 1 IPU (IPU " in one.stdout and "1 GCD," in one.stdout, one.stdout
    removed = run(server, "vipu", "remove", "partition", "p1")
    assert removed.returncode == 0 and "(1 IPU freed)" in removed.stdout, removed.stdout
    names = [p["name"] for p in json.loads(run(server, "vipu", "list", "partitions", "--json").stdout)]
    assert names == ["p4"]


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["create", "partition", "a", "--size", "0"], 2, ["size is 0", "power of two"]),
        (["create", "partition", "a", "--size", "3"], 2, ["size is 3", "use 2 or 4"]),
        (["create", "partition", "a", "--size", "96"], 2, ["size is 96", "largest partition is 64"]),
        (["create", "partition", "a", "--size", "1024"], 2, ["size is 1024"]),
        (["create", "partition", "a", "--size", "-8"], 2, ["size is -8"]),
        (["create", "partition", "has space", "--size", "4"], 2, ["partition name", "' '"]),
        (["create", "partition", "ipu-\u00fc", "--size", "4"], 2, ["partition name", "ASCII"]),
        (["create", "partition", "x" * 500, "--size", "4"], 2, ["500 characters", "at most 64"]),
        (["create", "partition", "a", "--size", "16", "--num-gcds", "3"], 2, ["num_gcds is 3", "divide"]),
        (["remove", "partition", "ghost"], 3, ["'ghost' does not exist"]),
        (["get", "partition", "ghost"], 3, ["does not exist"]),
        (["create", "partition", "a", "--size", "4", "--allocation", "nope"], 3, ["allocation 'nope'"]),
    ],
)
def test_bad_input_gets_one_clear_line_and_a_distinct_exit_code(unchanged_server, args, code, words):
    out = run(unchanged_server, "vipu", *args)
    assert out.returncode == code, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vipu: error: ")
    for word in words:
        assert word in lines[0]
    assert json.loads(run(unchanged_server, "vipu", "list", "partitions", "--json").stdout) == []


def test_conflicts_and_capacity(server):
    assert run(server, "vipu", "create", "partition", "big", "--size", "64").returncode == 0
    taken = run(server, "vipu", "create", "partition", "big", "--size", "1")
    assert taken.returncode == 4 and "already exists" in taken.stderr
    full = run(server, "vipu", "create", "partition", "more", "--size", "1")
    assert full.returncode == 7 and "no free aligned block" in full.stderr


def test_a_size_the_allocation_can_never_hold_is_bad_input_and_one_that_could_is_no_capacity(server):
    """Regression: 64 IPUs asked of a 16-IPU allocation said "no free aligned block ... remove a partition" (exit 7),
    though no removal could ever make room."""
    assert run(server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag00,ag01,ag02,ag03").returncode == 0
    never = run(server, "vipu", "create", "partition", "big", "--size", "64", "--allocation", "a1")
    assert never.returncode == 2, never.stderr
    assert never.stderr == "vipu: error: size is 64 but allocation a1 has 16 IPUs; ask for at most 16\n"
    assert run(server, "vipu", "create", "partition", "half", "--size", "8", "--allocation", "a1").returncode == 0
    later = run(server, "vipu", "create", "partition", "big", "--size", "16", "--allocation", "a1")
    assert later.returncode == 7 and "no free aligned block of 16 IPUs in allocation a1: 8 IPUs free" in later.stderr
    # a job is held to the same rule at submit: it would have waited forever (PartitionNodeLimit)
    job = run(server, "vipu", "submit", "--ipus", "32", "--time-limit", "1m", "--allocation", "a1")
    assert job.returncode == 2 and job.stderr == (
        "vipu: error: --ipus is 32 but allocation a1 has 16 IPUs; ask for at most 16\n")
    # naming no allocation, it is the default's: the 48 IPUs a1 left, whose largest aligned block holds 32, as sbatch
    # refuses more nodes than the partition has (walk29: it waited, PartitionNodeLimit)
    for test_only in ((), ("--test-only",)):
        job = run(server, "vipu", "submit", "--ipus", "64", "--time-limit", "1m", *test_only)
        assert job.returncode == 2 and job.stderr == (
            "vipu: error: --ipus is 64 but allocation default has 48 IPUs, whose largest aligned block holds 32 IPUs"
            " (the agents no named allocation holds); ask for at most 32 or name a larger allocation"
            " (`vipu list allocations`)\n")
    assert json.loads(run(server, "vipu", "queue", "--json").stdout)["jobs"] == []


def test_an_allocation_pending_jobs_asked_for_is_not_removed_from_under_them(server):
    """Regression: `vipu-admin remove allocation a1` with a job pending in a1 left it waiting forever
    (ReqNodeNotAvail); removal is refused, as it is while a partition of a1 exists, until the jobs are gone."""
    assert run(server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag00,ag01").returncode == 0
    held = run(server, "vipu", "submit", "--ipus", "4", "--time-limit", "1m", "--allocation", "a1", "--hold",
               "--array", "0-1", "--parsable")
    array = int(held.stdout)
    refused = run(server, "vipu-admin", "remove", "allocation", "a1")
    assert refused.returncode == 4 and refused.stderr == (
        f"vipu-admin: error: allocation a1 has pending jobs {array}_0, {array}_1 that asked for it; cancel them first"
        f" (`vipu cancel {array}_0 {array}_1`)\n")
    assert run(server, "vipu", "cancel", str(array)).returncode == 0
    assert run(server, "vipu-admin", "remove", "allocation", "a1").returncode == 0


def test_a_size_a_removed_agent_blocks_is_no_capacity_not_bad_input(server):
    """Regression: after `remove agent ag00`, 64 IPUs were bad input (exit 2, "ask for at most 32") while a 64-IPU
    job waited with ReqNodeNotAvail; re-creating the agent makes 64 possible again."""
    assert run(server, "vipu-admin", "remove", "agent", "ag00").returncode == 0
    out = run(server, "vipu", "create", "partition", "d", "--size", "64")
    assert out.returncode == 7 and out.stderr == (
        "vipu: error: no free aligned block of 64 IPUs in allocation default: 60 IPUs free, the largest free block"
        " holds 32 IPUs; out of service: machine 0 has no agent (`vipu-admin create agent NAME --machine 0`); an admin"
        " can bring them back, or ask for a smaller size\n")
    never = run(server, "vipu", "create", "partition", "d", "--size", "128")
    assert never.returncode == 2 and "size is 128 but bow-pod64 has 64 IPUs" in never.stderr
    assert run(server, "vipu-admin", "create", "agent", "ag00", "--machine", "0").returncode == 0
    assert run(server, "vipu", "create", "partition", "d", "--size", "64").returncode == 0


def test_get_partition_shows_gcd_sync_replicas_when_given(server):
    made = run(server, "vipu", "create", "partition", "g", "--size", "8", "--num-gcds", "2", "--gcd-sync-replicas", "4")
    assert made.returncode == 0 and "2 GCDs (4 GCD sync replicas)" in made.stdout, made.stdout
    assert "GCD sync replicas: 4" in run(server, "vipu", "get", "partition", "g").stdout
    assert run(server, "vipu", "create", "partition", "plain", "--size", "2").returncode == 0
    assert "GCD sync replicas" not in run(server, "vipu", "get", "partition", "plain").stdout
    # a count no partition of its size can sync is bad input, naming the counts it can
    big = run(server, "vipu", "create", "partition", "big", "--size", "2", "--gcd-sync-replicas", "3000000000")
    assert big.returncode == 2 and "use one of 1, 2, or leave it out" in big.stderr, big.stderr
    listed = run(server, "vipu", "list", "partitions", "--json")
    assert listed.returncode == 0 and {x["name"] for x in json.loads(listed.stdout)} == {"g", "plain"}


def test_unreachable_server_is_its_own_exit_code(unchanged_server):
    server = unchanged_server  # only for the environment: every call here goes to port 1
    env = {**server.env(), "VIPU_CLI_API_PORT": "1"}
    out = run(server, "vipu", "list", "partitions", env=env)
    assert out.returncode == 5
    assert "cannot reach the V-IPU controller at 127.0.0.1:1" in out.stderr
    # a submit is retried until --timeout (a restarting controller still takes it, once), and says so at once
    out = run(server, "vipu", "--timeout", "1", "submit", "--ipus", "1", env=env)
    assert out.returncode == 5 and out.stderr.splitlines() == [
        "vipu: the controller at 127.0.0.1:1 is not answering; retrying for up to 1 s (give a longer --timeout before"
        " the command: vipu --timeout SECONDS COMMAND ...)",
        "vipu: error: cannot reach the V-IPU controller at 127.0.0.1:1; is vipu-server running? (set --api-host/"
        "--api-port or VIPU_CLI_API_HOST/VIPU_CLI_API_PORT)",
    ]


def test_flags_beat_environment_for_the_address(unchanged_server):
    server = unchanged_server
    env = {**server.env(), "VIPU_CLI_API_PORT": "1"}
    out = run(server, "vipu", "--api-host", "127.0.0.1", "--api-port", str(server.port), "list", "partitions", env=env)
    assert out.returncode == 0, out.stderr


def test_admin_objects_through_vipu_admin(server):
    agents = json.loads(run(server, "vipu-admin", "list", "agents", "--json").stdout)
    assert len(agents) == 16 and agents[0]["name"] == "ag00" and agents[0]["ipus"] == [0, 1, 2, 3]
    made = run(server, "vipu-admin", "create", "allocation", "team-a", "--agents", "ag14,ag15")
    assert made.returncode == 0, made.stderr
    allocations = {a["name"]: a for a in json.loads(run(server, "vipu", "list", "allocations", "--json").stdout)}
    assert allocations["team-a"]["ipus"] == 8 and "ag14" not in allocations["default"]["agents"]
    part = json.loads(run(server, "vipu", "create", "partition", "pa", "--size", "8", "--allocation", "team-a", "--json").stdout)
    assert part["ipus"] == list(range(56, 64)) and part["allocation"] == "team-a"
    user = run(server, "vipu-admin", "create", "user", "alice")
    assert user.returncode == 0 and "Access key (shown once): " in user.stdout
    assert json.loads(run(server, "vipu-admin", "get", "user", "alice", "--json").stdout)["name"] == "alice"
    assert run(server, "vipu-admin", "get", "cluster", "cluster0").returncode == 0
    dup = run(server, "vipu-admin", "create", "agent", "ag00")
    assert dup.returncode == 4 and "already exists" in dup.stderr
    failed = run(server, "vipu-admin", "fail", "ipus", "57", "--json")
    assert [p["name"] for p in json.loads(failed.stdout)] == ["pa"]
    assert json.loads(run(server, "vipu", "get", "partition", "pa", "--json").stdout)["partition"]["state"] == "FAILED"
    shown = run(server, "vipu", "get", "partition", "pa").stdout
    assert "56 57(failed) 58 59" in shown and "Failed IPUs: 57 (remove the partition" in shown


def test_an_agent_host_or_port_that_jobs_could_not_dial_is_refused(server):
    """Regression: --host "bad host!" was listed and handed to jobs as their IPUoF address; --host "" became
    127.0.0.1 and --port 0 became 8080 without a word. Without --host and --port: 127.0.0.1 and 8080."""
    assert run(server, "vipu-admin", "remove", "agent", "ag15").returncode == 0
    for flags, line in [
        (["--host", "bad host!"], "host (--host) 'bad host!' contains ' '; give the agent's DNS name or IP address,"
                                  " e.g. ipum0.example.com or 10.1.0.7"),
        (["--host", ""], "host (--host) '' is empty; give the agent's DNS name or IP address, e.g. ipum0.example.com"
                         " or 10.1.0.7"),
        # the CLI knows a port's range (the controller says the same to other clients: tests/server/test_grpc.py)
        (["--port", "0"], "Invalid value for '--port': 0 is not in the range 1<=x<=65535; see `vipu-admin create agent"
                          " --help`"),
        (["--port", "65536"], "Invalid value for '--port': 65536 is not in the range 1<=x<=65535; see `vipu-admin"
                              " create agent --help`"),
    ]:
        out = run(server, "vipu-admin", "create", "agent", "q", "--machine", "15", *flags)
        assert out.returncode == 2 and out.stderr == f"vipu-admin: error: {line}\n", out.stderr
    assert "q" not in run(server, "vipu-admin", "list", "agents").stdout
    made = run(server, "vipu-admin", "create", "agent", "q", "--machine", "15", "--host", "ipum15.lab", "--json")
    assert made.returncode == 0 and json.loads(made.stdout)["host"] == "ipum15.lab"
    assert run(server, "vipu-admin", "remove", "agent", "q").returncode == 0
    made = json.loads(run(server, "vipu-admin", "create", "agent", "q", "--machine", "15", "--json").stdout)
    assert (made["host"], made["port"]) == ("127.0.0.1", 8080)


def test_drain_and_resume_an_agent(server):
    drained = run(server, "vipu-admin", "drain", "agent", "ag00", "--reason", "fan", "--json")
    assert drained.returncode == 0 and json.loads(drained.stdout)["state"] == "DRAINED"
    part = json.loads(run(server, "vipu", "create", "partition", "p", "--size", "4", "--json").stdout)
    assert part["ipus"] == [4, 5, 6, 7]  # placement skips the drained machine
    states = [i["state"] for i in json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)[:8]]
    assert states == ["drained"] * 4 + ["allocated"] * 4
    big = run(server, "vipu", "create", "partition", "all", "--size", "64")
    assert big.returncode == 7
    assert run(server, "vipu-admin", "resume", "agent", "ag00").returncode == 0
    assert run(server, "vipu", "remove", "partition", "p").returncode == 0
    assert run(server, "vipu", "create", "partition", "all", "--size", "64").returncode == 0


def test_every_vipu_admin_remove_says_what_it_removed(server):
    """Regression: `vipu-admin remove user alice` printed the user's table and no "removed" line."""
    assert run(server, "vipu-admin", "create", "user", "alice").returncode == 0
    assert run(server, "vipu-admin", "create", "allocation", "a1", "--agents", "ag14,ag15").returncode == 0
    assert run(server, "vipu-admin", "remove", "agent", "ag15").returncode == 0
    for args, line in [
        (["user", "alice"], "User alice removed; their access key no longer works (their jobs and partitions stay,"
                            " for an admin to act on)"),
        (["allocation", "a1"], "Allocation a1 removed; its agents (ag14) are back in the default allocation"),
        (["agent", "ag14"], "Agent ag14 removed; machine 14 (IPUs 56-59) has no agent now"),
        (["cluster", "cluster0"], "Cluster cluster0 removed; its agents (" + " ".join(
            f"ag{m:02d}" for m in range(14)) + ") stay"),
    ]:
        out = run(server, "vipu-admin", "remove", *args)
        assert out.returncode == 0 and out.stdout == line + "\n", (args, out.stdout, out.stderr)
    removed = run(server, "vipu-admin", "remove", "user", "bob", "--json")
    assert removed.returncode == 3  # (and with --json, a removal prints the record, as before:)
    assert run(server, "vipu-admin", "create", "user", "bob").returncode == 0
    assert json.loads(run(server, "vipu-admin", "remove", "user", "bob", "--json").stdout)["name"] == "bob"


def test_an_agent_drained_under_a_running_job_shows_its_ipus_draining(server):
    """Regression, twice: `vipu-admin drain agent` while a job ran there first left its IPUs allocated, hiding the
    drain, then showed them drained (`vipu info` at ALLOCATED 0 | DRAINED 4, vipu_ipus allocated 0), so utilisation
    read 0 while the job ran. As Slurm's drng they are draining: in use, taking no new work, in `vipu info`,
    `vipu list ipus` and the vipu_ipus metric alike; drained once the job ends, idle again at resume."""
    from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for

    [job] = submit(server, "--ipus", "4", "--time-limit", "10m")
    running = wait_for(lambda: jobs(server)[job]["job_state"] == ["RUNNING"] and jobs(server)[job])
    listed = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    ipus = [i["id"] for i in listed if i["partition"] == f"slurm_{job}"]
    [(agent, machine)] = {(i["agent"], i["machine"]) for i in listed if i["id"] in ipus}
    drained = run(server, "vipu-admin", "drain", "agent", agent, "--reason", "fan")
    assert drained.returncode == 0, running
    # every view says the same, by one rule (vipu/partition/agent_states.py): the drain's own answer first
    assert drained.stdout.splitlines()[-1] == (f"Agent {agent} is DRAINING: job {job} still on its IPUs; DRAINED"
                                               " once that ends.")

    def agent_states() -> tuple[str, str, str, str]:
        """`vipu-admin get agent`, `vipu-admin list agents`, `vipu info -N` and `vipu info -R -l` on the agent."""
        got = json.loads(run(server, "vipu-admin", "get", "agent", agent, "--json").stdout)
        listed = json.loads(run(server, "vipu-admin", "list", "agents", "--json").stdout)
        nodes = run(server, "vipu", "info", "-N", "-h", "-o", "%N %t").stdout.splitlines()
        [node] = [line.split()[1] for line in nodes if line.startswith(agent)]
        [why] = [line.split()[-2] for line in run(server, "vipu", "info", "-R", "-l", "-h").stdout.splitlines()]
        return got["state"], next(a["state"] for a in listed if a["name"] == agent), node, why

    assert agent_states() == ("DRAINING", "DRAINING", "drng", "drng")
    assert json.loads(run(server, "vipu-admin", "get", "agent", agent, "--json").stdout)["jobs"] == [job]

    def seen() -> tuple[list[str], list[tuple[str, str]], str]:
        """`vipu info`'s domain row, the job's IPUs' (state, partition) in `vipu list ipus`, and /metrics."""
        table = run(server, "vipu", "info").stdout.splitlines()
        assert table[0].split() == ["ILD", "|", "IPUS", "|", "IDLE", "|", "ALLOCATED", "|", "COMPLETING", "|",
                                    "DRAINING", "|", "DRAINED", "|", "FAILED"]
        after = {i["id"]: i for i in json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)}
        with urllib.request.urlopen(server.metrics_url, timeout=10) as reply:
            metrics = reply.read().decode()
        return ([c.strip() for c in table[1].split("|")], [(after[i]["state"], after[i]["partition"]) for i in ipus],
                metrics)

    row, states, metrics = seen()
    assert row == ["pod64-0", "64", "60", "0", "0", "4", "0", "0"]
    assert states == [("draining", f"slurm_{job}")] * 4
    assert jobs(server)[job]["job_state"] == ["RUNNING"]  # the drain waits for the job: it keeps running
    top = run(server, "vipu", "top", "--once").stdout
    row_of_machine = next(line for line in top.splitlines() if line.startswith(f"{machine} "))
    assert "0 allocated  60 idle  4 draining  0 failed" in top and "~~~~" in row_of_machine, top
    assert f"slurm_{job}" in row_of_machine
    for line in ('vipu_ipus{ild="0",state="draining"} 4.0', 'vipu_ipus{ild="0",state="allocated"} 0.0',
                 'vipu_ipus{ild="0",state="drained"} 0.0'):
        assert line in metrics, line

    assert run(server, "vipu", "cancel", str(job)).returncode == 0  # the job ends: draining becomes drained
    wait_for(lambda: show(server, job)["state"] == "CANCELLED" and seen()[1] == [("drained", "")] * 4)
    assert agent_states() == ("DRAINED", "DRAINED", "drain", "drain")
    row, states, metrics = seen()
    assert row == ["pod64-0", "64", "60", "0", "0", "0", "4", "0"] and states == [("drained", "")] * 4
    assert 'vipu_ipus{ild="0",state="drained"} 4.0' in metrics and 'vipu_ipus{ild="0",state="draining"} 0.0' in metrics

    assert run(server, "vipu-admin", "resume", "agent", agent).returncode == 0
    row, states, _ = seen()
    assert row == ["pod64-0", "64", "64", "0", "0", "0", "0", "0"] and states == [("idle", "")] * 4


def test_admin_listings_take_no_header_and_cluster_sizes_are_checked_at_the_flag(unchanged_server):
    server = unchanged_server
    with_header = run(server, "vipu-admin", "list", "agents").stdout.splitlines()
    bare = run(server, "vipu-admin", "list", "agents", "--no-header")
    assert bare.returncode == 0 and bare.stdout.splitlines() == with_header[1:] and len(with_header) == 17
    for flag in ("0", "-3"):
        out = run(server, "vipu-admin", "create", "cluster", "c9", "--agents", "ag00", "--num-ipulinkdomains", flag)
        assert out.returncode == 2 and "--num-ipulinkdomains" in out.stderr and "not in the range x>=1" in out.stderr


def test_a_partition_owner_follows_the_user_name_rule(server):
    """As a job's user does: the owner goes into tables and environment variables."""
    out = run(server, "vipu", "--api-user-id", "bad user", "create", "partition", "bu", "--size", "1")
    assert out.returncode == 2 and "--api-user-id" in out.stderr and "user name 'bad user' contains ' '" in out.stderr
    assert run(server, "vipu", "--api-user-id", "first.last", "create", "partition", "ok", "--size", "1").returncode == 0


def test_info_names_each_ipu_link_domain_by_its_size(server_factory):
    """A Bow-Pod16's one domain is no Pod64."""
    server = server_factory("bow-pod16")
    assert run(server, "vipu", "info").stdout.splitlines()[1].split("|")[0].strip() == "pod16-0"
    assert [r["name"] for r in json.loads(run(server, "vipu", "info", "--json").stdout)["ilds"]] == ["pod16-0"]
