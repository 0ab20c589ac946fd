"""`vipu-admin drain|resume agent` take a Slurm host list, as `scontrol update NodeName=ag[01-02],ag05 State=...`:
the agents changed in one step or none (a name that is no agent refuses the whole list before anything changes),
each with its own line in the log; and a resume of an agent that is not drained is refused, as scontrol refuses
it ("Invalid node state specified"), saying its state and that resume undoes a drain."""

from __future__ import annotations

import json

from tests.cli.test_cli_e2e import run
from tests.cli.test_drain_reasons_e2e import events, lines
from tests.cli.test_jobs_e2e import wait_for


def states(server, *names: str) -> list[str]:
    agents = {x["name"]: x["state"] for x in json.loads(run(server, "vipu-admin", "list", "agents", "--json").stdout)}
    return [agents[n] for n in names]


def refused(server, code: int, *args: str) -> str:
    out = run(server, *args)
    assert out.returncode == code and not out.stdout, (out.returncode, out.stdout, out.stderr)
    return out.stderr.strip()


def test_a_host_list_is_drained_and_resumed_whole_each_agent_logged(server):
    answer = lines(server, "vipu-admin", "drain", "agent", "ag[01-02],ag05", "--reason", "PSU swap")
    assert [row.split("|")[0].strip() for row in answer[1:4]] == ["ag01", "ag02", "ag05"]
    assert answer[-1] == ("Agents ag[01-02,05] are DRAINED: nothing runs on them, and nothing new will until"
                          " `vipu-admin resume agent ag[01-02,05]`.")
    assert states(server, "ag00", "ag01", "ag02", "ag05") == ["ONLINE", "DRAINED", "DRAINED", "DRAINED"]
    nodes = lines(server, "vipu", "info", "-N", "-h", "-o", "%N %t")
    assert nodes[:6] == ["ag00 idle", "ag01 drain", "ag02 drain", "ag03 idle", "ag04 idle", "ag05 drain"]

    # a name that is no agent: the whole list refused, nothing changed
    assert refused(server, 3, "vipu-admin", "drain", "agent", "ag[14-17]", "--reason", "x") == (
        "vipu-admin: error: agents ag[16-17] do not exist (of the 4 named), so none was changed; `vipu-admin list"
        " agents` shows the ones that do")
    assert states(server, "ag14", "ag15") == ["ONLINE", "ONLINE"]
    assert "does not exist" in refused(server, 3, "vipu-admin", "resume", "agent", "gpu07")
    assert refused(server, 2, "vipu-admin", "drain", "agent", "ag[01-", "--reason", "x") == (
        "vipu-admin: error: names: 'ag[01-' has an unmatched bracket; write a range as ag[00-03]")

    # resume of agents not drained: refused whole, naming them, their state and the drained ones to resume
    assert refused(server, 4, "vipu-admin", "resume", "agent", "ag[01-03]") == (
        "vipu-admin: error: agent ag03 is ONLINE, not drained: resume undoes a drain (`vipu-admin drain agent`), so"
        " there is nothing to resume; none was resumed: resume the drained ones alone, `vipu-admin resume agent"
        " ag[01-02]`")
    assert states(server, "ag01", "ag02") == ["DRAINED", "DRAINED"]
    assert lines(server, "vipu-admin", "fail", "ipus", "0", "1", "--reason", "ECC") == [
        "IPUs 0 1 failed; partitions now FAILED: none"]
    assert refused(server, 4, "vipu-admin", "resume", "agent", "ag00") == (
        "vipu-admin: error: agent ag00 is ONLINE, not drained: resume undoes a drain (`vipu-admin drain agent`), so"
        " there is nothing to resume; failed IPUs come back with `vipu-admin repair ipus 0 1`")

    resumed = json.loads(run(server, "vipu-admin", "resume", "agent", "ag05,ag[01-02]", "--json").stdout)
    assert [(x["name"], x["state"]) for x in resumed] == [("ag05", "ONLINE"), ("ag01", "ONLINE"), ("ag02", "ONLINE")]
    one = json.loads(run(server, "vipu-admin", "drain", "agent", "ag07", "--reason", "fan", "--json").stdout)
    assert (one["name"], one["state"]) == ("ag07", "DRAINED")  # one name: the agent, as before

    def logged() -> list[tuple]:
        return [(e["event"], e["agent"], e["state"], e["reason"]) for e in events(server)
                if e["event"].startswith("agent_") and e["event"] != "agent_created"]

    want = [("agent_drained", name, "DRAINED", "PSU swap") for name in ("ag01", "ag02", "ag05")] + [
        ("agent_resumed", name, "ONLINE", None) for name in ("ag05", "ag01", "ag02")] + [
        ("agent_drained", "ag07", "DRAINED", "fan")]
    assert wait_for(lambda: len(logged()) == len(want) and logged()) == want  # a line each, as they come
