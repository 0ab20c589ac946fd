"""Shell completion in a real interactive zsh, driven through a pseudo-terminal (zsh's zpty): the script `vipu
completion zsh` prints, loaded as README says, completes commands, flags and the caller's job ids from a real
controller. Skipped where zsh is not installed (tests/cli/test_completion_e2e.py checks what vipu answers zsh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.conftest import console_script

pytestmark = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")

# The outer zsh starts an interactive one on a pseudo-terminal, loads compinit and vipu's script as a user's .zshrc
# would, types each line with a TAB and waits until the terminal shows what zsh put on the line (zpty -r PATTERN).
DRIVER = r"""
zmodload zsh/zpty || exit 3
zpty -b shell "zsh -f -i"
zpty -w shell 'PS1="%% "; unsetopt beep; autoload -U compinit; compinit -u -D; eval "$(vipu completion zsh)"; echo LOADED'
zpty -r shell out '*LOADED*' && zpty -r shell out '*LOADED*'
for line expect in "$@"; do
  zpty -w -n shell $'\x15'"$line"$'\t'
  zpty -r shell out "*$expect*" || exit 4
  print -r -- "GOT $expect"
done
zpty -d shell
"""


def completes(server, env: dict[str, str], *pairs: tuple[str, str]) -> str:
    """Types each (line, expected) pair and waits until the terminal shows `expected`; exits with what was seen."""
    args = [word for pair in pairs for word in pair]
    out = subprocess.run(["zsh", "-f", "-c", DRIVER, "driver", *args], capture_output=True, text=True, env=env,
                         timeout=30)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    return out.stdout


def test_zsh_completes_commands_flags_and_my_job_ids(server, tmp_path):
    user = f"zsh-{os.getpid()}"  # one job of this user's own: zsh then puts its id on the line
    env = {**server.env(), "VIPU_CLI_API_USER_ID": user, "HOME": str(tmp_path), "TERM": "dumb",
           "PATH": f"{Path(console_script('vipu')).parent}{os.pathsep}{os.environ['PATH']}"}
    held = run(server, "vipu", "--api-user-id", user, "submit", "--ipus", "1", "--hold", "--parsable", "--wrap", "true")
    assert held.returncode == 0, held.stderr
    job = held.stdout.strip()
    seen = completes(server, env,
                     ("vipu que", "vipu queue "),  # a command
                     ("vipu queue --me", "vipu queue --me "),  # a flag
                     ("vipu release ", f"vipu release {job}"),  # the caller's held job, from the controller
                     ("vipu update job " + job + " Na", f"vipu update job {job} Name="))
    assert seen.count("GOT ") == 4
