"""vipu submit stops reading its own options at the batch script, as sbatch's getopt does: every word after the
script is the script's (`job.sh input.txt -t 5` passes `-t 5` on and leaves the time limit alone); spec files still
take options after them. Both readers: typer's (submit_command.command_line) and fast_path's."""

from __future__ import annotations

import io
import sys

import pytest
import typer

from vipu.cli import fast_path
from vipu.cli.main import app


def params(args: list[str]) -> dict:
    submit = typer.main.get_command(app).commands["submit"]
    return submit.make_context("submit", args).params  # click's reading, the command not run


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "args.sh").write_text("#!/bin/bash\necho \"args: $*\"\n")
    (tmp_path / "a.yaml").write_text("ipus: 1\n")
    (tmp_path / "b.yaml").write_text("ipus: 2\n")


@pytest.mark.parametrize(("args", "specs", "set_"), [
    (["args.sh", "input.txt", "-t", "5"], ["args.sh", "input.txt", "-t", "5"], {}),
    (["args.sh", "-J", "renamed", "data"], ["args.sh", "-J", "renamed", "data"], {}),
    (["-t", "5", "args.sh", "--nice", "x"], ["args.sh", "--nice", "x"], {"time": "5"}),
    (["--nice", "args.sh", "-H"], ["args.sh", "-H"], {"nice": 100}),
    (["args.sh", "--", "-x"], ["args.sh", "-x"], {}),  # vipu's `job.sh -- ARGS` kept: that -- is not passed on
    (["-J", "n", "--", "args.sh", "-x"], ["args.sh", "-x"], {"name": "n"}),
    (["a.yaml", "b.yaml", "-t", "5", "-H"], ["a.yaml", "b.yaml"], {"time": "5", "hold": True}),  # specs: as before
    (["a.yaml", "-J", "x"], ["a.yaml"], {"name": "x"}),
    (["-HJ", "n", "args.sh", "-t", "5"], ["args.sh", "-t", "5"], {"hold": True, "name": "n"}),  # -J's value next
    (["-HJargs.sh", "args.sh", "-t", "5"], ["args.sh", "-t", "5"], {"hold": True, "name": "args.sh"}),
])
def test_options_end_at_the_script(files, args, specs, set_):
    got = params(args)
    assert list(got["specs"]) == specs
    assert {k: got[k] for k in set_} == set_
    for key in {"time", "name", "hold"} - set(set_):
        assert not got[key], key
    fast = fast_path.read(["submit", *args])
    if fast is not None:  # the forms it reads, read the same
        assert fast[1]["specs"] == specs and {k: fast[1][k] for k in set_ if k in fast[1]} == \
            {k: v for k, v in set_.items() if k in fast[1]}
        assert not {"time", "name", "hold"} - set(set_) & set(fast[1])


def test_a_piped_script_given_as_dash_ends_the_options_too(files, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"#!/bin/sh\necho hi\n")))
    assert list(params(["-", "-t", "5"])["specs"]) == ["-", "-t", "5"]
    from vipu.cli.spec_files import read_spec

    assert read_spec("-") == (b"#!/bin/sh\necho hi\n", "<stdin>")  # read once, still there for the submit


def test_a_piped_spec_given_as_dash_takes_options_after_it(files, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ipus: 1\n")))
    got = params(["-", "-t", "5"])
    assert (list(got["specs"]), got["time"]) == (["-"], "5")
