"""`vipu create|remove|reset|get partition`, `vipu list partitions|allocations|ipus`."""

from __future__ import annotations

import json

import typer

from vipu.cli.context import JsonOption, NoHeaderOption
from vipu.cli.output import as_dict, print_json, print_rows, table
from vipu.cli.params import int64, pod_ipus
from vipu.v1 import partition_pb2 as p

create = typer.Typer(help="Create a resource.", no_args_is_help=True)
remove = typer.Typer(help="Remove a resource.", no_args_is_help=True)
reset = typer.Typer(help="Reset a resource.", no_args_is_help=True)
get = typer.Typer(help="Show one resource in detail.", no_args_is_help=True)
listing = typer.Typer(help="List resources.", no_args_is_help=True)

PARTITION_HEADERS = ["Partition", "Cluster", "ILDs", "GW Routing", "ILD Routing", "Size", "GCDs", "State"]


def ipus_of(count: int, ipus) -> str:
    """'4 IPUs (IPUs 0-3)', '1 IPU (IPU 5)'."""
    ipus = list(ipus)
    span = f"IPU {ipus[0]}" if len(ipus) == 1 else f"IPUs {ipus[0]}-{ipus[-1]}"
    return f"{count} IPU{'' if count == 1 else 's'} ({span})"


def partition_row(x: p.Partition) -> list:
    return [x.name, x.cluster, x.ilds, x.gw_routing, x.ild_routing, x.size, x.num_gcds, x.state]


@create.command("partition")
def create_partition(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="partition name: ASCII letters, digits, '_', '-', '.'"),
    size: int = typer.Option(..., "--size", click_type=int64(past=pod_ipus), help="number of IPUs: a power of two"),
    num_gcds: int = typer.Option(None, "--num-gcds", click_type=int64(),
                                 help="graph compilation domains; must divide --size"),
    gcd_sync_replicas: int = typer.Option(None, "--gcd-sync-replicas", click_type=int64(),
                                          help="replicas that sync across GCDs"),
    reconfigurable: bool = typer.Option(False, "--reconfigurable", help="c2-compatible sync (reconfigurable)"),
    allocation: str = typer.Option("", "--allocation", help="allocation to carve from (default: default)"),
    json_out: bool = JsonOption,
):
    """Create a partition of --size IPUs, placed on an aligned ring of the IPU-Link torus.

    Under --secure, a user's partition needs an allocation an admin granted them (--allocation; `vipu-admin create
    allocation NAME --agents AGENTS --users YOU`): `default` serves jobs and admins only.
    """
    cli = ctx.obj
    request = p.CreatePartitionRequest(
        name=name, size=size, reconfigurable=reconfigurable, allocation=allocation, num_gcds=num_gcds,
        gcd_sync_replicas=gcd_sync_replicas,
    )
    part = cli.conn.create(cli.conn.partitions.CreatePartition, request, check=f"`vipu get partition {name}`")
    if cli.wants_json(json_out):
        print_json(part)
    else:
        gcds = f"{part.num_gcds} GCD{'' if part.num_gcds == 1 else 's'}"
        if part.HasField("gcd_sync_replicas"):
            gcds += f" ({part.gcd_sync_replicas} GCD sync replicas)"
        print(f"Partition {part.name} created: {ipus_of(part.size, part.ipus)}, {gcds}, {part.sync_type}, {part.state}")


@remove.command("partition")
def remove_partition(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    force: bool = typer.Option(False, "--force", help="remove even while a job holds it"),
    json_out: bool = JsonOption,
):
    """Remove a partition and give its IPUs back; --force of a running job's partition (slurm_N) cancels the job."""
    cli = ctx.obj
    part = cli.conn.call(cli.conn.partitions.RemovePartition, p.RemovePartitionRequest(name=name, force=force),
                         check=f"`vipu get partition {name}` (refused as not found once it is gone)")
    freed = f"{part.size} IPU{'' if part.size == 1 else 's'} freed"
    cancelled = f"; job {part.cancelled_job} cancelled" if part.cancelled_job else ""
    print_json(part) if cli.wants_json(json_out) else print(f"Partition {part.name} removed ({freed}){cancelled}")


@reset.command("partition")
def reset_partition(ctx: typer.Context, name: str = typer.Argument(...), json_out: bool = JsonOption):
    """Reset the IPUs of a partition."""
    cli = ctx.obj
    part = cli.conn.call(cli.conn.partitions.ResetPartition, p.ResetPartitionRequest(name=name),
                         check=f"`vipu get partition {name}`")
    print_json(part) if cli.wants_json(json_out) else print(f"Partition {part.name} reset: {part.state}")


@get.command("partition")
def get_partition(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    gcd: int = typer.Option(None, "--gcd", help="only this GCD"),
    ipu_configs: bool = typer.Option(False, "--ipu-configs", help="print the IPUoF config of each GCD"),
    json_out: bool = JsonOption,
):
    """The IPUoF view of a partition: machines, IPUs, ring order and the environment a job on it receives."""
    cli = ctx.obj
    view = cli.conn.call(cli.conn.partitions.GetPartition, p.GetPartitionRequest(name=name, gcd=gcd, ipu_configs=ipu_configs))
    if cli.wants_json(json_out):
        data = as_dict(view)
        for g in data["gcds"]:
            g["ipu_config"] = json.loads(g.pop("ipu_config_json")) if g["ipu_config_json"] else None
        print_json(data)
        return
    if ipu_configs:
        for g in view.gcds:
            print(json.dumps(json.loads(g.ipu_config_json), indent=2))
        return
    part = view.partition
    print(table(PARTITION_HEADERS, [partition_row(part)], cli.header))
    sync = f"  GCD sync replicas: {part.gcd_sync_replicas}" if part.HasField("gcd_sync_replicas") else ""
    print(f"\nSync type: {part.sync_type}{sync}  Allocation: {part.allocation}  Holder: {part.holder or '-'}")
    failed = [str(i.id) for m in view.machines for i in m.ipus if i.failed]
    if failed:
        print(f"Failed IPUs: {' '.join(failed)} (remove the partition and create another; `vipu-admin repair ipus` ends"
              " the fault)")
    rows = [[m.machine, m.agent, f"{m.host}:{m.port}",
             " ".join(f"{i.id}(failed)" if i.failed else str(i.id) for i in m.ipus)] for m in view.machines]
    print()
    print(table(["Machine", "Agent", "IPUoF address", "IPUs"], rows, cli.header))
    print(f"\nIPU-Link ring: {' '.join(map(str, view.ring))}")
    for g in view.gcds:
        span = f"IPU {g.ipus[0]}" if len(g.ipus) == 1 else f"IPUs {g.ipus[0]}-{g.ipus[-1]}"
        print(f"\nGCD {g.gcd} ({span}) environment:")
        for key in sorted(g.environment):
            print(f"  {key}={g.environment[key]}")


@listing.command("partitions")
def list_partitions(ctx: typer.Context, json_out: bool = JsonOption, no_header: bool = NoHeaderOption):
    """Every partition with its routing, size, GCDs and state."""
    cli = ctx.obj
    reply = cli.conn.every_page(cli.conn.partitions.ListPartitions, p.ListPartitionsRequest())
    if cli.wants_json(json_out):
        print_rows(reply.partitions)
    else:
        print(table(PARTITION_HEADERS, [partition_row(x) for x in reply.partitions], cli.with_header(no_header)))


@listing.command("allocations")
def list_allocations(ctx: typer.Context, json_out: bool = JsonOption, no_header: bool = NoHeaderOption):
    """Allocations and their agents ('default' holds every agent no other allocation has)."""
    cli = ctx.obj
    reply = cli.conn.every_page(cli.conn.partitions.ListAllocations, p.ListAllocationsRequest())
    if cli.wants_json(json_out):
        print_rows(reply.allocations)
    else:
        rows = [[a.name, a.ipus, " ".join(a.agents)] for a in reply.allocations]
        print(table(["Allocation ID", "IPUs", "Agents"], rows, cli.with_header(no_header)))


@listing.command("ipus")
def list_ipus(ctx: typer.Context, json_out: bool = JsonOption, no_header: bool = NoHeaderOption):
    """Every IPU: its machine, agent, IPU-Link domain, state and partition."""
    cli = ctx.obj
    reply = cli.conn.every_page(cli.conn.partitions.ListIpus, p.ListIpusRequest())
    if cli.wants_json(json_out):
        print_rows(reply.ipus)
    else:
        rows = [[i.id, i.machine, i.agent, i.index, i.ild, i.state, i.partition or "-"] for i in reply.ipus]
        print(table(["IPU", "Machine", "Agent", "Machine IPU", "ILD", "State", "Partition"], rows, cli.with_header(no_header)))


def register(app: typer.Typer) -> None:
    app.add_typer(create, name="create")
    app.add_typer(remove, name="remove")
    app.add_typer(reset, name="reset")
    app.add_typer(get, name="get")
    app.add_typer(listing, name="list")
