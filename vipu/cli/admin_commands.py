"""`vipu-admin`: agents, clusters, allocations and users on the controller's admin service."""

from __future__ import annotations

import typer

from vipu.cli import completion, ids_given_command
from vipu.cli.agent_commands import AGENT_HEADERS, agent_row, drain, resume
from vipu.cli.context import (
    JSON_HELP,
    ApiHostOption,
    ApiKeyOption,
    ApiPortOption,
    ApiUserOption,
    JsonOption,
    NoHeaderOption,
    TimeoutOption,
    TlsCaOption,
    prose_help,
    root_options,
)
from vipu.cli.failure import run_app
from vipu.cli.output import print_json, print_rows, table
from vipu.v1 import admin_pb2 as a

app = typer.Typer(
    name="vipu-admin",
    help="Administer a vipu-sim V-IPU controller: agents, clusters, allocations, users, faults.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
create = typer.Typer(help="Create an agent, cluster, allocation or user.", no_args_is_help=True)
update = typer.Typer(help="Change a user.", no_args_is_help=True)
remove = typer.Typer(help="Remove an agent, cluster, allocation or user (revoking its access key).", no_args_is_help=True)
get = typer.Typer(help="Show one agent, cluster, allocation or user.", no_args_is_help=True)
listing = typer.Typer(help="List agents, clusters, allocations or users.", no_args_is_help=True)
fail = typer.Typer(help="Inject faults (tests and operator drills).", no_args_is_help=True)


@app.callback()
def root(
    ctx: typer.Context,
    api_host: str = ApiHostOption,
    api_port: int = ApiPortOption,
    api_user_id: str = ApiUserOption,
    api_access_key: str = ApiKeyOption,
    tls_ca: str = TlsCaOption,
    timeout: float = TimeoutOption,
    json_out: bool = typer.Option(False, "--json", "--showjson", help=JSON_HELP),
    no_header: bool = typer.Option(False, "--no-header", help="omit table headers"),
):
    root_options(
        ctx, "vipu-admin", timeout, json_out, no_header, api_host=api_host, api_port=api_port, api_user_id=api_user_id,
        api_access_key=api_access_key, tls_ca=tls_ca,
    )


def csv(value: str) -> list[str]:
    return [x.strip() for x in value.split(",") if x.strip()]


def show(ctx: typer.Context, json_out: bool, message, headers: list[str], rows: list[list]) -> None:
    cli = ctx.obj
    if cli.wants_json(json_out):
        print_json(message)
    else:
        print(table(headers, rows, cli.header))


CLUSTER_HEADERS = ["Cluster", "ILDs", "Topology", "Cluster Topology", "Agents"]
ALLOCATION_HEADERS = ["Allocation ID", "IPUs", "Users", "Agents"]
USER_HEADERS = ["User", "Admin", "Unix user"]


def cluster_row(x) -> list:
    return [x.name, x.num_ilds, x.topology, x.cluster_topology, " ".join(x.agents)]


def allocation_row(x) -> list:
    return [x.name, x.ipus, " ".join(x.users) or "-", " ".join(x.agents)]


def user_row(x) -> list:
    return [x.name, "yes" if x.admin else "no", x.unix_user or "-"]


@create.command("agent")
def create_agent(
    ctx: typer.Context,
    name: str,
    host: str = typer.Option(None, "--host",
                             help="the agent's DNS name or IP address, which jobs dial (default: 127.0.0.1)"),
    port: int = typer.Option(None, "--port", min=1, max=65535, help="the agent's TCP port (default: 8080)"),
    machine: int = typer.Option(None, "--machine", help="machine index in the Pod (default: first without an agent)"),
    json_out: bool = JsonOption,
):
    """Register the agent of one IPU-Machine."""
    c = ctx.obj.conn
    x = c.create(c.admin.CreateAgent, a.CreateAgentRequest(name=name, host=host, port=port, machine=machine),
                 check=f"`vipu-admin get agent {name}`")
    show(ctx, json_out, x, AGENT_HEADERS, [agent_row(x)])


@create.command("cluster")
def create_cluster(
    ctx: typer.Context,
    name: str,
    agents: str = typer.Option(..., "--agents", help="comma-separated agent names (whole IPU-Link domains)"),
    num_ilds: int = typer.Option(1, "--num-ipulinkdomains", min=1, help="IPU-Link domains the agents form"),
    topology: str = typer.Option("", "--topology", help="torus or mesh (default: the Pod's)"),
    cluster_topology: str = typer.Option("", "--cluster-topology", help="looped, direct-attach or switched"),
    json_out: bool = JsonOption,
):
    """Join agents into a cluster of IPU-Link domains."""
    c = ctx.obj.conn
    request = a.CreateClusterRequest(
        name=name, agents=csv(agents), num_ilds=num_ilds, topology=topology, cluster_topology=cluster_topology
    )
    x = c.create(c.admin.CreateCluster, request, check=f"`vipu-admin get cluster {name}`")
    show(ctx, json_out, x, CLUSTER_HEADERS, [cluster_row(x)])


@create.command("allocation")
def create_allocation(
    ctx: typer.Context,
    name: str,
    agents: str = typer.Option(..., "--agents", help="comma-separated agent names"),
    users: str = typer.Option("", "--users", help="comma-separated users granted the allocation"),
    json_out: bool = JsonOption,
):
    """Grant agents to users as an allocation; partitions never span allocations."""
    c = ctx.obj.conn
    x = c.create(c.admin.CreateAllocation, a.CreateAllocationRequest(name=name, agents=csv(agents), users=csv(users)),
                 check=f"`vipu-admin get allocation {name}`")
    show(ctx, json_out, x, ALLOCATION_HEADERS, [allocation_row(x)])


@create.command("user")
def create_user(
    ctx: typer.Context,
    name: str,
    admin: bool = typer.Option(False, "--admin", help="may see and manage everything"),
    unix_user: str = typer.Option("", "--unix-user", metavar="ACCOUNT",
                                  help="the Unix account the user's programs run as under --secure (its uid, gid and"
                                       " groups, as slurmd runs a job as its submitter); never root nor root's group"),
    json_out: bool = JsonOption,
):
    """Create a user and print its access key (shown once; the controller keeps only a hash)."""
    c = ctx.obj.conn
    x = c.create(c.admin.CreateUser, a.CreateUserRequest(name=name, admin=admin, unix_user=unix_user),
                 check=f"`vipu-admin get user {name}` (a user made without its key shown must be removed and made"
                       " again: the key is shown once)")
    if ctx.obj.wants_json(json_out):
        print_json(x)
    else:
        print(f"User {x.user.name} created{' (admin)' if x.user.admin else ''}.")
        print(f"Access key (shown once): {x.access_key}")


@update.command("user")
def update_user(
    ctx: typer.Context,
    name: str,
    unix_user: str = typer.Option(None, "--unix-user", metavar="ACCOUNT",
                                  help="the Unix account the user's programs run as under --secure; \"\" removes it"),
    json_out: bool = JsonOption,
):
    """Change a user (sacctmgr modify user), keeping their access key."""
    c = ctx.obj.conn
    request = a.UpdateUserRequest(name=name)
    if unix_user is not None:
        request.unix_user = unix_user
    x = c.call(c.admin.UpdateUser, request, check=f"`vipu-admin get user {name}`")
    if ctx.obj.wants_json(json_out):
        print_json(x)
    else:
        print(f"User {x.name} updated: programs run as {x.unix_user or 'no account (refused under --secure)'}.")


def _simple(group: typer.Typer, verb: str, kind: str, rpc_name: str, headers: list[str], row) -> None:
    @group.command(kind)
    def command(ctx: typer.Context, name: str, json_out: bool = JsonOption):
        c = ctx.obj.conn
        x = c.call(getattr(c.admin, rpc_name), a.NameRequest(name=name))
        show(ctx, json_out, x, headers, [row(x)])

    command.__doc__ = f"{verb.capitalize()} one {kind}."


def _listed(ipus) -> str:
    """'IPU 8', 'IPUs 8 9': IPUs as given, for a message."""
    return f"IPU{'' if len(ipus) == 1 else 's'} {' '.join(map(str, ipus))}"


def _ipus(ipus) -> str:
    ipus = list(ipus)
    return f"IPU {ipus[0]}" if len(ipus) == 1 else f"IPUs {ipus[0]}-{ipus[-1]}" if ipus else "no IPUs"


# What each removal tells the operator, like `vipu remove partition` (the record itself is in --json).
REMOVED = {
    "agent": lambda x: f"Agent {x.name} removed; machine {x.machine} ({_ipus(x.ipus)}) has no agent now",
    "cluster": lambda x: f"Cluster {x.name} removed; its agents ({' '.join(x.agents) or 'none'}) stay",
    "allocation": lambda x: (f"Allocation {x.name} removed; its agents ({' '.join(x.agents) or 'none'}) are back in"
                             " the default allocation"),
    "user": lambda x: (f"User {x.name} removed; their access key no longer works (their jobs and partitions stay,"
                       " for an admin to act on)"),
}


def _remover(kind: str) -> None:
    @remove.command(kind)
    def command(ctx: typer.Context, name: str, json_out: bool = JsonOption):
        c = ctx.obj.conn
        x = c.call(getattr(c.admin, f"Remove{kind.capitalize()}"), a.NameRequest(name=name),
                   check=f"`vipu-admin get {kind} {name}` (refused as not found once it is gone)")
        print_json(x) if ctx.obj.wants_json(json_out) else print(REMOVED[kind](x))

    command.__doc__ = f"Remove one {kind}."


for _kind, _headers, _row in (
    ("agent", AGENT_HEADERS, agent_row),
    ("cluster", CLUSTER_HEADERS, cluster_row),
    ("allocation", ALLOCATION_HEADERS, allocation_row),
    ("user", USER_HEADERS, user_row),
):
    _simple(get, "show", _kind, f"Get{_kind.capitalize()}", _headers, _row)
    _remover(_kind)


def _lister(plural: str, rpc_name: str, field: str, headers: list[str], row) -> None:
    @listing.command(plural)
    def command(ctx: typer.Context, json_out: bool = JsonOption, no_header: bool = NoHeaderOption):
        c = ctx.obj.conn
        reply = c.every_page(getattr(c.admin, rpc_name), a.ListRequest())
        items = list(getattr(reply, field))
        if ctx.obj.wants_json(json_out):
            print_rows(items)
        else:
            print(table(headers, [row(x) for x in items], ctx.obj.with_header(no_header)))

    command.__doc__ = f"List {plural}."


_lister("agents", "ListAgents", "agents", AGENT_HEADERS, agent_row)
_lister("clusters", "ListClusters", "clusters", CLUSTER_HEADERS, cluster_row)
_lister("allocations", "ListAllocations", "allocations", ALLOCATION_HEADERS, allocation_row)
_lister("users", "ListUsers", "users", USER_HEADERS, user_row)


IPU_CHECK = "`vipu info -N` (a node's IPUs by state) or `vipu list ipus`"


@fail.command("ipus")
def fail_ipus(ctx: typer.Context, ipus: list[int] = typer.Argument(..., help="IPU numbers"),
              reason_text: str = typer.Option("", "--reason", metavar="TEXT",
                                              help="why (optional): kept with each IPU and shown by `vipu info -R`"),
              json_out: bool = JsonOption):
    """Mark IPUs failed; partitions on them become FAILED."""
    c = ctx.obj.conn
    ipus = list(dict.fromkeys(ipus))  # `fail ipus 8 8` fails IPU 8 once, and says so once
    reply = c.call(c.admin.FailIpus, a.FailIpusRequest(ipus=ipus, reason=reason_text), check=IPU_CHECK)
    if ctx.obj.wants_json(json_out):
        print_rows(reply.partitions)
    else:
        names = ", ".join(x.name for x in reply.partitions) or "none"
        print(f"{_listed(ipus)} failed; partitions now FAILED: {names}")


repair = typer.Typer(help="Put failed IPUs back in service.", no_args_is_help=True)
kill = typer.Typer(help="Fault injection: kill a machine's actor.", no_args_is_help=True)


@repair.command("ipus")
def repair_ipus(ctx: typer.Context, ipus: list[int] = typer.Argument(..., help="IPU numbers"), json_out: bool = JsonOption):
    """Put failed IPUs back in service (FAILED partitions stay FAILED until reset or removed). Refused, repairing
    none, if one of them is not failed, as `resume agent` is for an agent not drained."""
    c = ctx.obj.conn
    ipus = list(dict.fromkeys(ipus))
    reply = c.call(c.admin.RepairIpus, a.FailIpusRequest(ipus=ipus), check=IPU_CHECK)
    if ctx.obj.wants_json(json_out):
        print_json(list(reply.ipus))
    else:
        print(f"{_listed(reply.ipus)} repaired")


@kill.command("machine")
def kill_machine(ctx: typer.Context, machine: int = typer.Argument(..., help="machine index"), json_out: bool = JsonOption):
    """Kill a machine's actor: Ray restarts it empty, and its IPUs are marked failed (its jobs end NODE_FAIL)."""
    c = ctx.obj.conn
    reply = c.call(c.admin.KillMachine, a.MachineRequest(machine=machine), check=IPU_CHECK)
    if ctx.obj.wants_json(json_out):
        print_json(list(reply.ipus))
    else:
        print(f"Machine {machine} killed; IPUs {' '.join(map(str, reply.ipus))} will be marked failed")


@fail.command("link")
def fail_link(ctx: typer.Context, ipu_a: int = typer.Argument(...), ipu_b: int = typer.Argument(...),
              json_out: bool = JsonOption):
    """Fail the IPU-Link between two IPUs; both leave service and jobs on them end NODE_FAIL (requeued)."""
    c = ctx.obj.conn
    reply = c.call(c.admin.FailLink, a.FailLinkRequest(ipu_a=ipu_a, ipu_b=ipu_b), check=IPU_CHECK)
    if ctx.obj.wants_json(json_out):
        print_rows(reply.partitions)
    else:
        names = ", ".join(x.name for x in reply.partitions) or "none"
        print(f"IPU-Link {ipu_a}-{ipu_b} failed; IPUs {ipu_a} and {ipu_b} out of service; partitions FAILED: {names}")


ids_given_command.register(app)
app.add_typer(repair, name="repair")
app.add_typer(kill, name="kill")
app.add_typer(create, name="create")
app.add_typer(update, name="update")
app.add_typer(remove, name="remove")
app.add_typer(get, name="get")
app.add_typer(listing, name="list")
app.add_typer(fail, name="fail")
app.add_typer(drain, name="drain")
app.add_typer(resume, name="resume")
completion.register(app, "vipu-admin")
prose_help(app)


def run() -> None:
    run_app(app, "vipu-admin")
