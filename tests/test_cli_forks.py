"""A forked `vipu` call (tests/cli_forks.py) prints and exits as the console script does, whatever the caller's
environment and folder: settings read when a command runs, not when the fork server imported the CLI."""

from __future__ import annotations

import os
import socket

import pytest

from tests import cli_forks
from tests.conftest import console_script


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("prog, args", [
    ("vipu", ["--version"]),
    ("vipu", ["nosuchcommand"]),
    ("vipu", ["queue"]),
    ("vipu-admin", ["list", "users"]),
])
def test_a_forked_call_prints_and_exits_as_the_script(prog, args, tmp_path, monkeypatch):
    config = tmp_path / ".config" / "vipu" / "vipu-cli.hcl"
    config.parent.mkdir(parents=True)
    config.write_text(f"api-port = {closed_port()}\n")  # read from the HOME the call is given
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIPU_CLI_")} | {"HOME": str(tmp_path)}
    forked = cli_forks.run_script(console_script(prog), args, env=env, cwd=tmp_path)
    monkeypatch.setenv("VIPU_TEST_SUBPROCESS", "1")
    alone = cli_forks.run_script(console_script(prog), args, env=env, cwd=tmp_path)
    assert (forked.returncode, forked.stdout, forked.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_the_config_file_of_the_callers_home_is_the_one_read(tmp_path):
    port = closed_port()
    config = tmp_path / ".config" / "vipu" / "vipu-cli.hcl"
    config.parent.mkdir(parents=True)
    config.write_text(f"api-port = {port}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIPU_CLI_")} | {"HOME": str(tmp_path)}
    out = cli_forks.run_script(console_script("vipu"), ["queue"], env=env, cwd=tmp_path)
    assert out.returncode != 0 and f":{port}" in out.stderr, out.stderr
