"""The `vipu` program's typer app: Graphcore's verb-noun form for resources (`vipu create partition`), Slurm's words
for jobs. Every command takes --json; failures print one line and exit with a code from failure.py. main.py runs
it."""

from __future__ import annotations

import typer

from vipu import __version__
from vipu.cli import (
    accounting,
    cancel_command,
    completion,
    job_commands,
    node_info,
    offline,
    partition_commands,
    priorities,
    queue_command,
    submit_command,
    top,
    update_command,
)
from vipu.cli.context import (
    JSON_HELP,
    ApiHostOption,
    ApiKeyOption,
    ApiPortOption,
    ApiUserOption,
    TimeoutOption,
    TlsCaOption,
    prose_help,
    root_options,
)
from vipu.cli.failure import ERROR
from vipu.v1 import partition_pb2 as p

app = typer.Typer(
    name="vipu",
    help="Drive a vipu-sim V-IPU controller: partitions, allocations, IPUs and a Slurm-style job queue.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    server_version: bool = typer.Option(False, "--server-version", help="print the controller's version and exit"),
    api_host: str = ApiHostOption,
    api_port: int = ApiPortOption,
    api_user_id: str = ApiUserOption,
    api_access_key: str = ApiKeyOption,
    tls_ca: str = TlsCaOption,
    timeout: float = TimeoutOption,
    json_out: bool = typer.Option(False, "--json", "--showjson", help=JSON_HELP),
    no_header: bool = typer.Option(False, "--no-header", help="omit table headers"),
    version: bool = typer.Option(False, "--version", help="print this CLI's version and exit"),
):
    if version:
        print(f"vipu {__version__}")
        raise typer.Exit()
    cli = root_options(
        ctx, "vipu", timeout, json_out, no_header, api_host=api_host, api_port=api_port, api_user_id=api_user_id,
        api_access_key=api_access_key, tls_ca=tls_ca,
    )
    if server_version:
        info = cli.conn.call(cli.conn.partitions.GetVersion, p.GetVersionRequest())
        if cli.json:
            print(f'{{"version": "{info.version}", "host": "{cli.conn.address}", "pod": "{info.pod}"}}')
        else:
            print(f"version: {info.version}\nhost: {cli.conn.address}\npod: {info.pod} ({info.ipus} IPUs)")
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
        raise typer.Exit(ERROR)


partition_commands.register(app)
submit_command.register(app)
queue_command.register(app)
job_commands.register(app)
accounting.register(app)
node_info.register(app)
priorities.register(app)
cancel_command.register(app)
update_command.register(app)
offline.register(app)
top.register(app)
completion.register(app, "vipu")
prose_help(app)

