"""--export=NONE or a list of variables: the program still gets its user's login basics (HOME, SHELL, USER, LOGNAME,
PATH), from the passwd entry of the account it runs as, as sbatch's implied --get-user-env gives them; what --export
passed on is kept."""

from __future__ import annotations

import os
import pwd

from vipu.jobs.programs.hosts import Steps
from vipu.jobs.programs.login_environment import FALLBACK_PATH, login_path

from tests.jobs.programs.test_signals import launch

SHOW = 'printf "%s\\n" "$HOME" "$SHELL" "$USER" "$LOGNAME" "$PATH"\n'


def test_a_program_given_no_environment_gets_its_users_login(tmp_path):
    """The newcomer's walk: `--export NONE` left HOME empty."""
    steps = Steps()
    steps.start("none", {**launch(tmp_path, SHOW), "env": {"SLURM_JOB_ID": "7"}})  # all NONE passes on
    assert steps.wait("none", timeout=60) == {"ended": {"exit_code": 0, "signal": 0}}
    me = pwd.getpwuid(os.getuid())
    assert (tmp_path / "out").read_text().splitlines() == [me.pw_dir, me.pw_shell, me.pw_name, me.pw_name,
                                                           login_path(os.getuid())]


def test_what_export_passed_on_is_kept(tmp_path):
    steps = Steps()
    given = {"HOME": "/given", "PATH": "/given/bin:/usr/bin:/bin"}
    steps.start("given", {**launch(tmp_path, SHOW), "env": given})
    assert steps.wait("given", timeout=60) == {"ended": {"exit_code": 0, "signal": 0}}
    lines = (tmp_path / "out").read_text().splitlines()
    assert (lines[0], lines[2], lines[4]) == ("/given", pwd.getpwuid(os.getuid()).pw_name, given["PATH"])


def test_the_path_is_login_defs_for_a_user_or_root_else_logins_own(tmp_path):
    defs = tmp_path / "login.defs"
    defs.write_text("# comment\nENV_SUPATH\tPATH=/usr/sbin:/usr/bin\nENV_PATH PATH=/usr/local/bin:/usr/bin\n")
    assert (login_path(0, str(defs)), login_path(1000, str(defs))) == ("/usr/sbin:/usr/bin", "/usr/local/bin:/usr/bin")
    assert login_path(1000, str(tmp_path / "missing")) == FALLBACK_PATH
