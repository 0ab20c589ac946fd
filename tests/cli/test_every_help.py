"""Every command's --help prints and exits 0, with rich's markup on: a help text with "[/YY]" once crashed
`vipu history --help` with a MarkupError traceback."""

from __future__ import annotations

import click
import pytest
import typer.main
from typer.testing import CliRunner

from vipu.cli import admin_commands, vipu_app


def paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, command in sorted(group.commands.items()):
        out += paths(command, (*prefix, name)) if isinstance(command, click.Group) else [(*prefix, name)]
    return out


COMMANDS = [("vipu", vipu_app.app, p) for p in paths(typer.main.get_command(vipu_app.app))] + \
           [("vipu-admin", admin_commands.app, p) for p in paths(typer.main.get_command(admin_commands.app))]


@pytest.mark.parametrize("prog, app, path", COMMANDS, ids=[" ".join((c[0], *c[2])) for c in COMMANDS])
def test_every_help_prints(prog, app, path):
    out = CliRunner().invoke(app, [*path, "--help"], prog_name=prog, env={"COLUMNS": "100"})
    assert out.exit_code == 0 and out.exception is None, out.output
    assert "Usage:" in out.output
