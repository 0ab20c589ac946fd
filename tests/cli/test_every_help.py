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


def options_without_help(command: click.Command, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = [(*path, p.opts[0]) for p in command.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        out += options_without_help(sub, (*path, name))
    return out


def test_every_option_has_help_text():
    """`vipu submit --help` listed --qos, --user, --account and --nice with nothing beside them."""
    assert options_without_help(typer.main.get_command(vipu_app.app), ("vipu",)) == []
    assert options_without_help(typer.main.get_command(admin_commands.app), ("vipu-admin",)) == []


def test_submit_help_says_what_differs_from_sbatch():
    out = CliRunner().invoke(vipu_app.app, ["submit", "--help"], prog_name="vipu", env={"COLUMNS": "250"})
    help_of = {p.opts[0]: p.help for p in typer.main.get_command(vipu_app.app).commands["submit"].params}
    assert help_of["--qos"] == ("request a quality of service for the job: one of vipu-server's --scheduler-config"
                                " qos (default: its default_qos, normal); one name, not sbatch's list")
    assert help_of["--user"] == ("submit the job as this user (sbatch --uid, by name only); only an admin may name"
                                 " another user (under --secure; an open controller trusts every caller); default:"
                                 " the caller")
    assert help_of["--account"] == ("charge resources used by this job to this account: an arbitrary name, counted"
                                    " against max_submit_jobs_per_account and a QOS's max_jobs_per_account")
    assert help_of["--nice"] == ("run the job with an adjusted scheduling priority: -10000 to 10000 (sbatch's range"
                                 " is wider), negative raises it (admins only); --nice alone is 100, as sbatch's")
    assert out.exit_code == 0 and "run the job with an adjusted scheduling priority" in out.output
