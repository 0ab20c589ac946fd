"""`vipu-admin`'s agents as a table, and their drain and resume (scontrol update NodeName=LIST State=DRAIN
Reason=... and State=RESUME): one agent or a Slurm host list of them, changed whole or not at all."""

from __future__ import annotations

import typer

from vipu.cli.context import JsonOption
from vipu.cli.output import print_json, print_rows, table
from vipu.cli.slurm_time import stamp
from vipu.client.messages import seconds
from vipu.partition.node_names import hostlist
from vipu.v1 import admin_pb2 as a

drain = typer.Typer(help="Take agents out of service for new partitions (scontrol update State=DRAIN Reason=).",
                    no_args_is_help=True)
resume = typer.Typer(help="Put drained agents back in service (scontrol update State=RESUME).", no_args_is_help=True)
AGENT_HEADERS = ["Agent", "Host", "Port", "Machine", "IPUs", "State", "Reason"]


def agent_row(x) -> list:
    return [x.name, x.host, x.port, x.machine, " ".join(map(str, x.ipus)), x.state, reason(x)]


def reason(x) -> str:
    """As scontrol show node's Reason=: `fan replacement [root@2026-11-29T03:40:00]`; - when none."""
    if not x.HasField("reason"):
        return "-"
    return f"{x.reason.text} [{x.reason.user}@{stamp(seconds(x.reason.time))}]"


NAMES_HELP = ("an agent, or a Slurm host list of them as scontrol's NodeName= takes: ag[00-03,06],ag07 (ranges keep"
              " their zero padding)")


def _changed(ctx: typer.Context, rpc, request, names: str, json_out: bool) -> list | None:
    """The agents a drain or resume changed; printed as JSON (the agent, or a list for a host list naming several)
    and None with --json."""
    one = not any(c in names for c in "[],")
    x = ctx.obj.conn.call(rpc, request, check=f"`vipu-admin get agent {names}`" if one else "`vipu-admin list agents`")
    agents = list(x.agents)
    if ctx.obj.wants_json(json_out):
        print_json(agents[0]) if one and len(agents) == 1 else print_rows(agents)
        return None
    return agents


@drain.command("agent")
def drain_agent(
    ctx: typer.Context,
    names: str = typer.Argument(..., help=NAMES_HELP),
    reason_text: str = typer.Option(..., "--reason", metavar="TEXT",
                                    help="why (required, as scontrol requires Reason= with State=DRAIN): kept with"
                                         " who and when, shown by `vipu-admin get agent` and `vipu info -R`; a drain"
                                         " of a drained agent replaces it"),
    json_out: bool = JsonOption,
):
    """Drain agents: no new partition or job is placed on their IPUs; those running go on. An agent is DRAINING while
    a partition still holds some of its IPUs (the jobs named), DRAINED once none does (`vipu info -N`: drng, drain).
    A host list is drained whole or not at all: a name that is no agent refuses it, before anything changes."""
    c = ctx.obj.conn
    agents = _changed(ctx, c.admin.DrainAgents, a.DrainAgentsRequest(names=names, reason=reason_text), names, json_out)
    if agents is not None:
        print(table(AGENT_HEADERS, [agent_row(x) for x in agents], ctx.obj.header))
        print("\n" + "\n".join(drained(agents)))


def drained(agents) -> list[str]:
    """What the drain's answer says under its table: whether work still runs there, and which; the agents nothing
    runs on in one line."""
    done = [x.name for x in agents if x.state != "DRAINING"]
    lines = []
    if done:
        one, names = len(done) == 1, hostlist(done)
        lines.append(f"Agent{'' if one else 's'} {names} {'is' if one else 'are'} DRAINED: nothing runs on"
                     f" {'it' if one else 'them'}, and nothing new will until `vipu-admin resume agent {names}`.")
    from vipu.partition.rules import job_of_partition  # (here: it imports the Pod's model, which CLI starts skip)

    for x in agents:
        if x.state != "DRAINING":
            continue
        others = [p for p in x.partitions if job_of_partition(p) not in x.jobs]
        running = [f"job{'s' if len(x.jobs) > 1 else ''} {' '.join(map(str, x.jobs))}"] if x.jobs else []
        holding = [f"partition{'s' if len(others) > 1 else ''} {' '.join(others)}"] if others else []
        lines.append(f"Agent {x.name} is DRAINING: {' and '.join(running + holding)} still on its IPUs; DRAINED once"
                     f" {'they end' if len(x.partitions) > 1 else 'that ends'}.")
    return lines


@resume.command("agent")
def resume_agent(ctx: typer.Context, names: str = typer.Argument(..., help=NAMES_HELP),
                 json_out: bool = JsonOption):
    """Put drained agents back in service (scontrol update State=RESUME); their reasons go. Refused, before anything
    changes, for a name that is no agent or an agent that is not drained (resume undoes a drain)."""
    c = ctx.obj.conn
    agents = _changed(ctx, c.admin.ResumeAgents, a.AgentsRequest(names=names), names, json_out)
    if agents is not None:
        print(table(AGENT_HEADERS, [agent_row(x) for x in agents], ctx.obj.header))
