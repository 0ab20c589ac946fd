"""A job's -o/-e folder, where the controller opens the file as its own user, refused at the submit when the submit
knows it is missing or not allowed (the run could only fail at its start); a folder only the start knows is left
to the start."""

from __future__ import annotations

import pytest

import vipu.jobs.programs.command_spec  # noqa: F401 - registers the command workload with JobSpec
from vipu.control.output_files import OutputFiles
from vipu.errors import InvalidArgument
from vipu.scheduler.job_spec import parse_spec


def sleep(home, output: str) -> object:
    return parse_spec({"ipus": 1, "output": output, "submit_dir": str(home),
                       "workload": {"kind": "sleep", "duration": 1}})


def program(home, **fields) -> object:
    workload = {"kind": "command", "script": "#!/bin/sh\ntrue\n", "submit_dir": str(home),
                **({"chdir": fields.pop("chdir")} if "chdir" in fields else {})}
    return parse_spec({"ipus": 1, **fields, "workload": workload})


def refusal(outputs: OutputFiles, spec, program: bool) -> tuple[str, str]:
    with pytest.raises(InvalidArgument) as refused:
        outputs.check_submit(spec, program)
    [(field, _)] = refused.value.violations
    return refused.value.message, field


def test_a_folder_the_submit_knows_is_refused_naming_the_field_and_the_fix(tmp_path):
    home, elsewhere, state = tmp_path / "home", tmp_path / "elsewhere", tmp_path / "state"
    home.mkdir()
    elsewhere.mkdir()
    outputs = OutputFiles(state)
    assert refusal(outputs, sleep(home, f"{home}/gone/%j.out"), False) == (
        f"output file {home}/gone/%j.out: its directory {home}/gone does not exist; create it, or give a path"
        " in an existing directory (as sbatch, vipu never makes it)", "spec.output")
    assert refusal(outputs, sleep(home, f"{elsewhere}/x.out"), False) == (
        f"output file {elsewhere}/x.out is outside the folders this controller writes job output into ({home},"
        f" {state}/job-output): give a path under one of them (a relative path is under where vipu submit runs), or"
        " ask the operator for another output folder (vipu-server's output-dir option)", "spec.output")
    # a folder given as the file: no run could open it
    (home / "sub").mkdir()
    assert refusal(outputs, sleep(home, f"{home}/sub"), False) == (
        f"output file {home}/sub is a directory; give a file in it (e.g. {home}/sub/%j.out)", "spec.output")
    # a built-in's /dev/null would fail its start as any file outside the folders allowed does: refused now
    assert refusal(outputs, sleep(home, "/dev/null"), False)[0].startswith("output file /dev/null is outside")
    # (a program's working folder is allowed too: home again)
    assert refusal(outputs, program(home, error=f"{elsewhere}/e.txt"), True) == (
        f"error file {elsewhere}/e.txt is outside the folders this controller writes job output into ({home},"
        f" {state}/job-output): give a path under one of them (a relative path is under where vipu submit runs), or"
        " ask the operator for another output folder (vipu-server's output-dir option)", "spec.error")
    assert refusal(outputs, program(home, chdir=f"{home}/gone", output=f"{home}/gone/o"), True) == (
        f"workload.chdir {home}/gone does not exist; create it, or give a working directory that exists",
        "spec.workload.chdir")  # the cause, not its output's missing folder


def test_what_only_the_start_knows_is_left_to_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    outputs = OutputFiles(tmp_path / "state")
    for spec, is_program in ((sleep(home, f"{home}/%u/%j.out"), False),  # a folder named by its patterns
                             (sleep(home, f"{home}/here-%j.out"), False),
                             (program(home, output="/dev/null"), True),  # as sbatch's: nothing kept, nothing harmed
                             (program(home), True),  # slurm-%j.out in its working directory
                             (program(home, output=f"{home}/o-%j.txt", error=f"{home}/e-%x.txt"), True)):
        outputs.check_submit(spec, is_program)  # no refusal
    (home / "taken.out").write_text("another's\n")  # an existing file: the start decides (it may be gone by then)
    outputs.check_submit(sleep(home, f"{home}/taken.out"), False)
