"""The submitter's soft limits as sbatch sends them and slurmstepd sets them (resource_limits.py); what is set runs
in a child process, whose limits are its own."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from vipu.jobs.programs.resource_limits import NAMES, UNLIMITED, check_environment, chosen, read_value, submitted

HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def applied_in_child(env: dict[str, str], soft: int | None = None) -> dict:
    """What `applied` leaves of `env`, says, and sets NOFILE's soft limit to, in a child whose soft limit is `soft`."""
    code = ("import json, resource, sys\n"
            "from vipu.jobs.programs.resource_limits import applied\n"
            "soft = json.loads(sys.argv[2])\n"
            "if soft is not None:\n"
            "    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "env, said = applied(json.loads(sys.argv[1]), 'n1')\n"
            "print(json.dumps({'env': env, 'said': said, 'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)}))\n")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(env), json.dumps(soft)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize(("value", "names"), [
    ("ALL", NAMES), ("NONE", ()), ("NOFILE", ("NOFILE",)), ("RLIMIT_CORE,NPROC", ("CORE", "NPROC")),
    ("NOFILE CORE", ("CORE", "NOFILE")),  # blanks separate too; Slurm's order
])
def test_propagate_names_the_limits_as_sbatch_reads_them(value, names):
    assert chosen(value) == names


@pytest.mark.parametrize(("value", "said"), [
    ("nofile", "'nofile' is not a resource limit"),  # sbatch's names are capitals only
    ("NOFILE,FOO", "'FOO' is not a resource limit"),
    (",", "it names no limit"),
])
def test_an_unknown_limit_is_refused_by_its_name(value, said):
    with pytest.raises(ValueError, match=said):
        chosen(value)


def test_the_submitters_soft_limits_are_sent_marked_u_only_when_named():
    sent = submitted(None)
    assert sorted(sent) == sorted(f"SLURM_RLIMIT_{n}" for n in NAMES)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert sent["SLURM_RLIMIT_NOFILE"] == str(soft)
    assert submitted("NOFILE") == {"SLURM_RLIMIT_NOFILE": f"U{soft}"}
    assert submitted("NONE") == {}


@pytest.mark.parametrize(("text", "want"), [
    ("77", (77, False)), ("U77", (77, True)), (" 12", (12, False)),  # strtoul's leading blanks
    (str(UNLIMITED), (resource.RLIM_INFINITY, False)), ("99999999999999999999", (resource.RLIM_INFINITY, False)),
])
def test_a_value_is_read_as_slurmstepd_reads_it(text, want):
    assert read_value("SLURM_RLIMIT_NOFILE", text) == want


@pytest.mark.parametrize("text", ["abc", "", "-1", "7k", "U"])
def test_a_malformed_value_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match=f"SLURM_RLIMIT_CORE is {text!r}"):
        check_environment({"SLURM_RLIMIT_CORE": text, "SLURM_RLIMIT_FOO": "x"})  # FOO: no limit, a plain variable


def test_a_limit_is_set_and_its_variable_removed():
    got = applied_in_child({"SLURM_RLIMIT_NOFILE": "77", "SLURM_RLIMIT_FOO": "x", "HOME": "/h"})
    assert got == {"env": {"SLURM_RLIMIT_FOO": "x", "HOME": "/h"}, "said": [], "nofile": [77, HARD]}


def test_a_value_above_the_hard_limit_is_cut_to_it_unless_named():
    assert applied_in_child({"SLURM_RLIMIT_NOFILE": str(HARD + 1)}, soft=64)["nofile"] == [HARD, HARD]
    assert applied_in_child({"SLURM_RLIMIT_NOFILE": str(UNLIMITED)}, soft=64)["nofile"] == [HARD, HARD]
    named = applied_in_child({"SLURM_RLIMIT_NOFILE": f"U{HARD + 1}"}, soft=64)
    assert named == {"env": {}, "nofile": [64, HARD],  # left as it was, and said as slurmstepd says it
                     "said": [f"slurmstepd-n1: error: Can't propagate RLIMIT_NOFILE of {HARD + 1} from submit host:"
                              " Invalid argument"]}


def test_a_malformed_value_of_a_job_from_before_is_said_and_left():
    got = applied_in_child({"SLURM_RLIMIT_CORE": "abc"})
    assert got["env"] == {"SLURM_RLIMIT_CORE": "abc"}
    assert got["said"] == ["slurmstepd-n1: error: Invalid SLURM_RLIMIT_CORE env var, value = `abc'"]
