"""vipu submit --nice takes its value optionally, as sbatch's (100 when given alone), without losing --nice=5,
--nice 5 or --nice -5: the command line is read through submit_command.command_line before click reads it."""

import pytest
import typer

from vipu.cli.main import app
from vipu.cli.submit_command import command_line


@pytest.mark.parametrize(("args", "want"), [
    (["--nice"], ["--nice=100"]),  # alone: sbatch's 100
    (["--nice", "job.sh", "a"], ["--nice=100", "job.sh", "a"]),  # the script is no value
    (["--nice", "-J", "x"], ["--nice=100", "-J", "x"]),  # nor the next option
    (["--nice", "-"], ["--nice=100", "-"]),  # nor stdin's -
    (["--nice", "5", "job.sh"], ["--nice", "5", "job.sh"]),  # a whole number next is its value
    (["--nice", "-5"], ["--nice", "-5"]),  # a negative one too (admins only: the controller says)
    (["--nice", "+5"], ["--nice", "+5"]),
    (["--nice=5"], ["--nice=5"]),
    (["-J", "--nice", "job.sh"], ["-J", "--nice", "job.sh"]),  # -J's value, not an option
    (["job.sh", "--", "--nice"], ["job.sh", "--", "--nice"]),  # the script's own argument
    (["--nice", "--nice", "3"], ["--nice=100", "--nice", "3"]),
])
def test_command_line(args, want):
    assert command_line(args) == want


@pytest.mark.parametrize(("args", "nice", "specs"), [
    (["--nice"], 100, None),
    (["--nice", "job.sh"], 100, ["job.sh"]),
    (["--nice", "7", "job.sh"], 7, ["job.sh"]),
    (["--nice", "-5", "job.sh"], -5, ["job.sh"]),
    (["--nice=0", "job.sh"], 0, ["job.sh"]),
    (["job.sh"], None, ["job.sh"]),
])
def test_vipu_submit_reads_nice_as_sbatch(args, nice, specs):
    submit = typer.main.get_command(app).commands["submit"]
    params = submit.make_context("submit", args).params  # click's reading, the command not run
    assert (params["nice"], list(params["specs"] or []) or None) == (nice, specs)
