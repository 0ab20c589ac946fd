"""`vipu queue` and `vipu submit` read without typer (vipu/cli/fast_path.py) do what the typer app does: the tables
name the typer commands' own options, the plain functions take typer's defaults, a command line the fast path does
not read is left to typer, and both paths print the same and exit alike against a live controller."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import pytest
import typer

from tests.conftest import console_script
from vipu.cli import fast_path
from vipu.cli.fast_path import FLAG, OFF, TEXT, TEXTS, read
from vipu.cli.queue_listing import queue_jobs
from vipu.cli.sbatch_options import BY_PARAM
from vipu.cli.submit import submit_jobs
from vipu.cli.vipu_app import app

ORDERED = {("queue", "user"), ("queue", "me")}
LEFT_TO_TYPER = {"queue": {"iterate"}, "submit": {"ipus", "nice"}}  # integers, checked by the app
PLAIN = {"queue": queue_jobs, "submit": submit_jobs}


def typer_command(name: str):
    return typer.main.get_command(app).commands[name]


@pytest.mark.parametrize("name", ["queue", "submit"])
def test_the_tables_name_each_option_as_the_typer_command_does(name):
    options = {p.name: p for p in typer_command(name).params if p.param_type_name == "option"}
    read_here = {}
    for param, kind, names in fast_path.COMMANDS[name]():
        option = options[param]
        if kind == OFF:
            assert set(names) == set(option.secondary_opts), (param, names)
        else:
            assert set(names) == set(option.opts), (param, names)
            assert option.is_flag == (kind == FLAG), param
            assert option.multiple == (kind == TEXTS), param
            if kind in (TEXT, TEXTS):  # taken as typed: no conversion, no check
                assert type(option.type).__name__ == "StringParamType", (param, option.type)
        # no callback the fast path would skip; queue_command.later only orders --me and -u, and with both the
        # fast path leaves the command line to typer
        assert option.callback is None or (name, param) in ORDERED, param
        read_here[param] = kind
    assert set(options) - set(read_here) == LEFT_TO_TYPER[name]


def plain_defaults(name: str) -> dict:
    """The plain function's parameters and their defaults: submit_jobs takes sbatch_options.py's as **given."""
    plain = {p: v.default for p, v in inspect.signature(PLAIN[name]).parameters.items() if p != "cli"}
    if name == "submit":
        del plain["given"]
        plain.update({param: option.default for param, option in BY_PARAM.items()})
    return plain


@pytest.mark.parametrize("name", ["queue", "submit"])
def test_the_plain_functions_take_typer_defaults(name):
    [info] = [c for c in app.registered_commands if c.callback.__name__ == name]
    typer_params = inspect.signature(info.callback).parameters
    plain = plain_defaults(name)
    assert [p for p in typer_params if p != "ctx"] == list(plain)
    for param, info_default in typer_params.items():
        if param != "ctx":
            assert plain[param] == info_default.default.default, param


def test_submit_jobs_refuses_a_parameter_it_does_not_have():
    with pytest.raises(TypeError, match="unknown options \\['nodess'\\]"):
        submit_jobs(None, nodess="2")


@pytest.mark.parametrize(("args", "expected"), [
    (["queue"], ("queue", {})),
    (["queue", "-u", "a", "--user=b", "-h", "-t", "PD"], ("queue", {"user": ["a", "b"], "no_header": True,
                                                                     "state": ["PD"]})),
    (["queue", "-o", "%i %j", "--json"], ("queue", {"fmt": "%i %j", "json_out": True})),
    (["submit", "a.yaml", "-H", "b.yaml"], ("submit", {"specs": ["a.yaml", "b.yaml"], "hold": True})),
    (["submit", "--no-hold", "--wrap", "echo hi", "-J", "x"], ("submit", {"hold": False, "wrap": "echo hi",
                                                                          "name": "x"})),
    (["submit", "-"], ("submit", {"specs": ["-"]})),
    (["queue", "--help"], None),
    (["queue", "-uX"], None),  # click reads it as -u X; left to typer rather than read two ways
    (["queue", "--me", "-u", "bob"], None),  # the later of them holds: typer's app knows their order
    (["queue", "-i", "2"], None),  # an integer, checked by typer's app
    (["queue", "word"], None),
    (["submit", "--ipus", "4"], None),
    (["submit", "--", "-x"], None),
    (["submit", "-J"], None),
    (["submit", "-J", "-x"], None),
    (["submit", "--hold=1"], None),
    (["--json", "queue"], None),  # root options: typer's
    (["history"], None),
    ([], None),
])
def test_read_takes_the_common_forms_and_leaves_the_rest_to_typer(args, expected):
    assert read(args) == expected


def test_a_shell_asking_for_completions_gets_typer(monkeypatch):
    monkeypatch.setenv("_VIPU_COMPLETE", "complete_bash")
    assert read(["queue"]) is None


TYPER_PATH = "import sys; from vipu.cli.failure import run_app; from vipu.cli.vipu_app import app; run_app(app, 'vipu')"


def both(server, *args: str, cwd) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    fast = subprocess.run([console_script("vipu"), *args], capture_output=True, text=True, env=server.env(),
                          timeout=60, cwd=cwd)
    slow = subprocess.run([sys.executable, "-c", TYPER_PATH, *args], capture_output=True, text=True,
                          env=server.env(), timeout=60, cwd=cwd)
    return fast, slow


def same(out: str) -> str:
    return re.sub(r"\d+", "N", out)  # job ids and times move on between the two runs


def test_both_paths_print_the_same_and_exit_alike(server, tmp_path):
    (tmp_path / "held.yaml").write_text("name: held\nipus: 4\ntime_limit: 10m\nhold: true\n")
    (tmp_path / "job.sh").write_text("#!/bin/sh\n#SBATCH --ipus=4 --time=5 --hold\necho hi\n")
    (tmp_path / "bad.yaml").write_text("name: bad\nipus: 3\ntime_limit: 10m\n")
    cases = [
        ["submit", "held.yaml"], ["submit", "-H", "--parsable", "job.sh"], ["submit", "bad.yaml"],
        ["submit", "missing.yaml"], ["submit", "held.yaml", "held.yaml", "--json"], ["submit", "-D", "x", "held.yaml"],
        ["submit", "--test-only", "held.yaml"], ["submit"],
        ["queue"], ["queue", "-h"], ["queue", "-t", "PD", "-o", "%i %j %u %t %r"], ["queue", "-t", "BOGUS"],
        ["queue", "-O", "JobID,Nope"], ["queue", "--start"], ["queue", "-u", "nobody", "-l"], ["queue", "-j", "x"],
    ]
    for args in cases:
        assert read(args) is not None, args
        fast, slow = both(server, *args, cwd=tmp_path)
        assert (fast.returncode, same(fast.stdout), same(fast.stderr)) == \
               (slow.returncode, same(slow.stdout), same(slow.stderr)), args
