"""The installed `vipu` and `vipu-admin` console scripts against a live controller, as a user runs them."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import console_script


def run(server, *args: str, env=None) -> subprocess.CompletedProcess:
    prog, *rest = args
    return subprocess.run(
        [console_script(prog), *rest], capture_output=True, text=True, env=env or server.env(), timeout=60
    )


def test_server_version_names_version_and_host(server):
    out = run(server, "vipu", "--server-version")
    assert out.returncode == 0, out.stderr
    assert "version: 0.1.0" in out.stdout
    assert f"host: 127.0.0.1:{server.port}" in out.stdout


def test_partition_lifecycle_through_the_cli(server):
    created = run(server, "vipu", "create", "partition", "p16", "--size", "16", "--json")
    assert created.returncode == 0, created.stderr
    part = json.loads(created.stdout)
    assert part["size"] == 16 and part["state"] == "ACTIVE" and part["ipus"] == list(range(16))

    assert run(server, "vipu", "create", "partition", "p4", "--size", "4", "--num-gcds", "2", "--reconfigurable").returncode == 0
    table = run(server, "vipu", "list", "partitions").stdout.splitlines()
    assert table[0].split("|")[0].strip() == "Partition"
    assert [line.split("|")[0].strip() for line in table[1:]] == ["p16", "p4"]

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
def test_bad_input_gets_one_clear_line_and_a_distinct_exit_code(server, args, code, words):
    out = run(server, "vipu", *args)
    assert out.returncode == code, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vipu: error: ")
    for word in words:
        assert word in lines[0]
    assert json.loads(run(server, "vipu", "list", "partitions", "--json").stdout) == []


def test_conflicts_and_capacity(server):
    assert run(server, "vipu", "create", "partition", "big", "--size", "64").returncode == 0
    taken = run(server, "vipu", "create", "partition", "big", "--size", "1")
    assert taken.returncode == 4 and "already exists" in taken.stderr
    full = run(server, "vipu", "create", "partition", "more", "--size", "1")
    assert full.returncode == 7 and "no free aligned block" in full.stderr


def test_unreachable_server_is_its_own_exit_code(server):
    env = {**server.env(), "VIPU_CLI_API_PORT": "1"}
    out = run(server, "vipu", "list", "partitions", env=env)
    assert out.returncode == 5
    assert "cannot reach the V-IPU controller at 127.0.0.1:1" in out.stderr
    # a submit is retried until --timeout (a restarting controller still takes it, once), and says so at once
    out = run(server, "vipu", "--timeout", "1", "submit", "--ipus", "1", env=env)
    assert out.returncode == 5 and out.stderr.splitlines() == [
        "vipu: the controller at 127.0.0.1:1 is not answering; retrying for up to 1 s (--timeout)",
        "vipu: error: cannot reach the V-IPU controller at 127.0.0.1:1; is vipu-server running? (set --api-host/"
        "--api-port or VIPU_CLI_API_HOST/VIPU_CLI_API_PORT)",
    ]


def test_flags_beat_environment_for_the_address(server):
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


def test_drain_and_resume_an_agent(server):
    drained = run(server, "vipu-admin", "drain", "agent", "ag00", "--json")
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
