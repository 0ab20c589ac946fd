"""Options every `vipu` and `vipu-admin` command shares, set once on the root and read by each command."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from vipu.cli.connection import Connection, resolve_address

JSON_HELP = "print JSON (a stable schema) instead of a table"
JsonOption = typer.Option(False, "--json", "--showjson", help=JSON_HELP)
NoHeaderOption = typer.Option(False, "--no-header", "--noheader", help="omit the table header")


@dataclass
class Cli:
    conn: Connection
    json: bool
    header: bool

    def wants_json(self, local: bool) -> bool:
        return self.json or local

    def with_header(self, no_header: bool) -> bool:
        return self.header and not no_header


def root_options(
    ctx: typer.Context,
    prog: str,
    api_host: str | None,
    api_port: int | None,
    timeout: float,
    json_out: bool,
    no_header: bool,
) -> Cli:
    host, port = resolve_address(api_host, api_port, prog)
    cli = Cli(Connection(prog, host, port, timeout), json_out, not no_header)
    ctx.obj = cli
    return cli

