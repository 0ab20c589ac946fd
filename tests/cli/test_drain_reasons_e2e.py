"""Drain reasons, as Slurm's `scontrol update NodeName=X State=DRAIN Reason=...` and `sinfo -R`: required, kept
with who and when across a restart, shown by every view, gone at resume; a failure's too; and the admin's lines
of the controller's log."""

from __future__ import annotations

import json
import re

from tests.cli.test_cli_e2e import run

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


def lines(server, *args: str) -> list[str]:
    out = run(server, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def events(server) -> list[dict]:
    """The controller's lines from logger vipu.events (its log is JSON: stderr is no terminal)."""
    found = []
    for line in server.stderr_text().splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record["logger"] == "vipu.events":
                found.append(record)
    return found


def test_a_drain_needs_a_reason_that_every_view_shows_and_a_restart_keeps(server_factory):
    server = server_factory("bow-pod64")
    missing = run(server, "vipu-admin", "drain", "agent", "ag05")
    assert missing.returncode == 2 and "--reason" in missing.stderr and run(
        server, "vipu-admin", "get", "agent", "ag05", "--json").stdout.count('"ONLINE"') == 1
    for bad, said in (("   ", "reason (--reason) is empty; say why the agent is drained"),
                      ("fan\nreplacement", "reason (--reason) holds '\\n'; give one line of printable text"),
                      ("x" * 513, "reason (--reason) is 513 characters long; say why in at most 512")):
        out = run(server, "vipu-admin", "drain", "agent", "ag05", "--reason", bad)
        assert out.returncode == 2 and said in out.stderr, out.stderr

    answer = lines(server, "vipu-admin", "drain", "agent", "ag05", "--reason", "fan replacement")
    assert answer[-1] == ("Agent ag05 is DRAINED: nothing runs on it, and nothing new will until `vipu-admin resume"
                          " agent ag05`.")
    assert lines(server, "vipu-admin", "fail", "ipus", "40", "41", "--reason", "ECC errors") == [
        "IPUs 40 41 failed; partitions now FAILED: none"]
    agent = json.loads(run(server, "vipu-admin", "get", "agent", "ag05", "--json").stdout)
    assert (agent["state"], agent["reason"]["text"], agent["reason"]["user"]) == ("DRAINED", "fan replacement", "root")
    row = lines(server, "vipu-admin", "get", "agent", "ag05")[1]
    [stamp] = re.findall(rf"fan replacement \[root@({STAMP})\]", row)
    listed = [r for r in lines(server, "vipu-admin", "list", "agents") if r.startswith(" ag05 ")]
    assert listed == [row]

    def reasons() -> list[list[str]]:
        return [re.split(r"\s{2,}|\s(?=\S+$)", line.strip()) for line in lines(server, "vipu", "info", "-R")]

    want = [["REASON", "USER", "TIMESTAMP", "NODELIST"], ["fan replacement", "root", stamp, "ag05"]]
    got = reasons()
    assert got[:2] == want and got[2][::3] == ["ECC errors", "ag10"] and re.fullmatch(STAMP, got[2][2]), got
    long = lines(server, "vipu", "info", "-R", "-l", "-h")
    assert [line.split()[-2:] for line in long] == [["drain", "ag05"], ["mix", "ag10"]]  # 2 of 4 IPUs failed
    node = [line.split() for line in lines(server, "vipu", "info", "-N", "-l") if line.startswith(("NODELIST", "ag05"))]
    assert node == [["NODELIST", "NODES", "PARTITION", "STATE", "CPUS", "REASON"],
                    ["ag05", "1", "default*", "drained", "4", "fan", "replacement"]]
    nodes = json.loads(run(server, "vipu", "info", "-R", "--json").stdout)["nodes"]
    assert [(n["name"], n["reason"]["text"], n["reason"]["user"]) for n in nodes] == [
        ("ag05", "fan replacement", "root"), ("ag10", "ECC errors", "root")]

    server.restart()  # controller state: the reason, its user and its time come back from the state database
    assert reasons()[:2] == want
    assert json.loads(run(server, "vipu-admin", "get", "agent", "ag05", "--json").stdout)["reason"] == agent["reason"]

    again = lines(server, "vipu-admin", "drain", "agent", "ag05", "--reason", "PSU swap")  # replaces the reason
    assert "PSU swap [root@" in again[1]
    assert lines(server, "vipu-admin", "resume", "agent", "ag05")[1].split("|")[-2:] == [" ONLINE ", " -"]
    assert [r[0] for r in reasons()[1:]] == ["ECC errors"]  # only the failed IPUs' machine is left

    logged = [(e["event"], e.get("agent") or e.get("ipus"), e.get("state"), e["reason"], e["by"])
              for e in events(server) if e["event"].startswith(("agent_", "ipus_"))]
    assert logged == [
        ("agent_created", "ag[00-15]", None, None, "controller"),  # the first start's agents, one line
        ("agent_drained", "ag05", "DRAINED", "fan replacement", "root"),
        ("ipus_failed", [40, 41], None, "ECC errors", "root"),
        ("agent_drained", "ag05", "DRAINED", "PSU swap", "root"),
        ("agent_resumed", "ag05", "ONLINE", None, "root"),
    ]
