"""A batch script made into a spec as sbatch makes its job: --export's environment, paths made absolute against the
working directory, the default job name."""

from __future__ import annotations

import pytest

from vipu.cli.batch_script import batch_spec, default_name, wrapped
from vipu.cli.export_env import exported

SHELL = {"HOME": "/home/ann", "PATH": "/usr/bin", "FOO": "shell", "SLURM_CONF": "/etc/slurm.conf"}


@pytest.mark.parametrize(("value", "want"), [
    ("ALL", SHELL),
    ("all", SHELL),
    ("NONE", {"SLURM_CONF": "/etc/slurm.conf"}),  # as sbatch: SLURM_* only
    ("ALL,BAR=1", {**SHELL, "BAR": "1"}),
    ("ALL,FOO=given", {**SHELL, "FOO": "given"}),  # read in order: the value given is the last word
    ("HOME,BAR=2", {"SLURM_CONF": "/etc/slurm.conf", "HOME": "/home/ann", "BAR": "2"}),  # only those
    ("MISSING", {"SLURM_CONF": "/etc/slurm.conf"}),  # a name the shell does not have passes nothing
    ("NONE,BAR=1", {"SLURM_CONF": "/etc/slurm.conf", "BAR": "1"}),  # walk40: as sbatch 22.05, NONE and the list
    ("none,FOO", {"SLURM_CONF": "/etc/slurm.conf", "FOO": "shell"}),
    ("BAR=a=b", {"SLURM_CONF": "/etc/slurm.conf", "BAR": "a=b"}),
    ('BAR="a,b",BAZ=', {"SLURM_CONF": "/etc/slurm.conf", "BAR": "a,b", "BAZ": ""}),
])
def test_export_passes_on_what_sbatch_does(value, want):
    assert exported(value, SHELL) == want


def test_all_keeps_the_access_key_out_of_the_stored_environment_unless_it_is_named():
    shell = {**SHELL, "VIPU_CLI_API_ACCESS_KEY": "secret"}
    assert exported("ALL", shell) == SHELL
    assert exported("ALL,VIPU_CLI_API_ACCESS_KEY", shell) == shell


@pytest.mark.parametrize(("value", "said"), [
    ("", "has an empty entry"),
    ("ALL,,FOO", "has an empty entry"),
    ("FOO,", "has an empty entry"),
    ("NONE,ALL", "NONE passes none of the environment on and ALL all of it"),
    ("1FOO", "'1FOO' is not a variable name"),
    ("A-B=1", "'A-B' is not a variable name"),
    ('FOO="a,b', "has an unclosed quote"),
])
def test_a_malformed_export_is_refused(value, said):
    with pytest.raises(ValueError, match=said):
        exported(value, SHELL)


def test_paths_are_absolute_against_the_working_directory_as_sbatch_makes_them():
    spec = batch_spec("#!/bin/sh\ntrue\n", ["a", "-b"], {"ipus": 1, "chdir": "run", "output": "logs/%j.out",
                                                           "error": "/abs/err", "export": "NONE"},
                      "/home/ann", SHELL, "job.sh")
    assert spec == {"ipus": 1, "output": "/home/ann/run/logs/%j.out", "error": "/abs/err", "name": "job.sh",
                    "workload": {"kind": "command", "script": "#!/bin/sh\ntrue\n", "args": ["a", "-b"],
                                 "submit_dir": "/home/ann", "chdir": "/home/ann/run",
                                 "environment": {"SLURM_CONF": "/etc/slurm.conf"}}}
    here = batch_spec("#!/bin/sh\n", [], {"ipus": 1, "output": "o.txt", "name": "given"}, "/home/ann", {}, "job.sh")
    assert here["output"] == "/home/ann/o.txt" and here["name"] == "given"  # -J beats the file's name
    assert here["workload"]["chdir"] is None and here["workload"]["environment"] == {}  # ALL of nothing


@pytest.mark.parametrize(("source", "want"), [
    ("job.sh", "job.sh"), ("/home/ann/jobs/train-1.sbatch", "train-1.sbatch"), ("<stdin>", "sbatch"),
    ("--wrap", "wrap"), ("my job.sh", "my job.sh"), (".hidden", ".hidden"),  # any printable name, as sbatch's
    ("a\nb.sh", None),  # not a name the controller takes: its default
])
def test_a_job_is_named_after_its_script_as_sbatch_names_it(source, want):
    assert default_name(source) == want


def test_wrap_makes_a_sh_script_around_the_command():
    assert wrapped("echo hi | tr a-z A-Z") == ("#!/bin/sh\n# This script was created by vipu submit --wrap.\n\n"
                                               "echo hi | tr a-z A-Z\n")
