"""Every vipu command of docs/mapping.md's table "Slurm command and flag -> vipu" runs as written against a live
controller holding jobs of every kind the rows name (1 running, 2 pending, array 3, and 6 ended twice), and exits
0 without a word on stderr."""

from __future__ import annotations

import os
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import as_from_a_terminal, interrupted
from tests.cli_forks import run_command_line

ROOT = Path(__file__).resolve().parents[2]
TITLE = "## Slurm command and flag -> vipu"


def table_commands() -> list[str]:
    """The vipu commands of the table's second column, each backticked one of each row."""
    page = (ROOT / "docs/mapping.md").read_text()
    section = page.split(TITLE, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    cells = [re.split(r"(?<!\\)\|", row)[2] for row in rows]
    return [c.replace("\\|", "|") for cell in cells for c in re.findall(r"`([^`]+)`", cell)]


def test_the_table_covers_every_command_and_flag_it_names():
    commands = table_commands()
    assert all(c.split()[0] == "vipu" or "vipu " in c for c in commands)
    said = " ".join(commands)
    for flag in ("-o", "-O", "-j", "-u", "--me", "-t", "--states", "--state", "-h", "-l", "-S", "--start", "-i",
                 "--json", "-E", "-s", "-X", "-D", "-P", "-p", "-n", "-N"):
        assert f" {flag} " in f" {said} " or f" {flag}\n" in said, flag


def iterate(command: str, env: dict) -> tuple[int, str]:
    """A command that lists until interrupted: its first listing, then Ctrl-C."""
    proc = subprocess.Popen(shlex.split(command), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            if ready and proc.stdout.readline() == "\n":  # the blank line after a listing
                break
    finally:
        code = interrupted(proc)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    return code, err


def test_every_vipu_command_of_the_table_runs(server):
    [running] = submit(server, "--ipus", "16", "--time-limit", "10m")
    [pending] = submit(server, "--ipus", "64", "--time-limit", "10m", "--user", "bob")
    array = submit(server, "--ipus", "1", "--time-limit", "1m", "--array", "0-2", "--hold", "--user", "alice")[0]
    [ended] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0.1s")
    assert (running, pending, array) == (1, 2, 3)  # the ids the table names
    wait_for(lambda: show(server, running)["state"] == "RUNNING" and show(server, ended)["state"] == "COMPLETED")
    assert run(server, "vipu", "requeue", str(ended)).returncode == 0  # history -D: a row per run
    wait_for(lambda: show(server, ended)["state"] == "COMPLETED" and show(server, ended)["requeue_count"] == 1)
    env = {**server.env(), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in table_commands():
        if " -i " in f"{command} ":
            code, err = iterate(command, env)
        else:
            out = run_command_line(command, env, ROOT)
            code, err = out.returncode, out.stderr
        assert (code, err) == (0, ""), command
