"""Options every `vipu` and `vipu-admin` command shares, set once on the root and read by each command."""

from __future__ import annotations

import inspect
import math

import typer

from vipu.cli.connection import DEFAULT_TIMEOUT_S, Cli, Connection, resolve

JSON_HELP = "print JSON (a stable schema) instead of a table; indented at a terminal, one line when piped"
JsonOption = typer.Option(False, "--json", "--showjson", help=JSON_HELP)
NoHeaderOption = typer.Option(False, "--no-header", "--noheader", help="omit the table header")
# squeue's, sinfo's and sprio's spelling too
ShortNoHeaderOption = typer.Option(False, "--noheader", "-h", "--no-header",
                                   help="omit the header (nothing at all is printed when there is nothing to list)")


def prose(command):
    """A command whose docstring's paragraphs are prose: each one's lines joined into one, for typer's rich help
    keeps a paragraph's line breaks (in a command's own --help after its first paragraph, and in the command
    list for the first), so a docstring wrapped at the source's width printed sentences broken mid-line."""
    paragraphs = inspect.cleandoc(command.__doc__ or "").split("\n\n")
    command.__doc__ = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    return command


def prose_help(app) -> None:
    """Every command of a typer app, and of the apps added to it, as prose (above): what `--help` and docs/cli.md
    show, since both build the commands from these docstrings."""
    for info in app.registered_commands:
        if info.callback is not None:
            prose(info.callback)
    for group in app.registered_groups:
        prose_help(group.typer_instance)


def root_options(ctx: typer.Context, prog: str, timeout: float, json_out: bool, no_header: bool, **flags) -> Cli:
    """`flags`: api_host, api_port, api_user_id, api_access_key, tls_ca as given on the command line (or None)."""
    settings = resolve(prog, flags["api_host"], flags["api_port"], flags["api_user_id"], flags["api_access_key"],
                       flags["tls_ca"])
    cli = Cli(Connection(prog, settings, timeout), json_out, not no_header)
    ctx.obj = cli
    return cli



# Where the controller is and who is calling: the same options on vipu and vipu-admin.
ApiHostOption = typer.Option(None, "--api-host", help="controller host (else VIPU_CLI_API_HOST, config, localhost)")
ApiPortOption = typer.Option(None, "--api-port", help="controller port (else VIPU_CLI_API_PORT, config, 8090)")
ApiUserOption = typer.Option(None, "--api-user-id", help="who you are (else VIPU_CLI_API_USER_ID, config)")
ApiKeyOption = typer.Option(None, "--api-access-key",
                            help="access key for a --secure controller (else VIPU_CLI_API_ACCESS_KEY, config)")
TlsCaOption = typer.Option(None, "--tls-ca", help="PEM CA to check a TLS controller (else VIPU_CLI_TLS_CA, config)")
def _seconds(value: float) -> float:
    if math.isnan(value):  # a range check lets nan through: every comparison with it is false
        raise typer.BadParameter("nan is not a number of seconds; give 0.1 to 86400")
    return value


# at most a day: a larger deadline overflowed gRPC's and was reported as the controller not answering in time
TimeoutOption = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", min=0.1, max=86400, callback=_seconds,
                             help="seconds to wait for the controller")
