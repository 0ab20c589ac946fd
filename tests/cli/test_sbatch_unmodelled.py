"""sbatch flags vipu-sim does not model: each is one line naming the flag, a warning where the job still runs as
asked, a refusal (exit 2) where it would not; the same from a #SBATCH line. And sbatch's rule for a flag's input
variable."""

from __future__ import annotations

import pytest

from vipu.cli.batch_directives import parse_directives
from vipu.cli.sbatch_environment import from_environment, switched_on
from vipu.cli.sbatch_unmodelled import unmodelled


@pytest.mark.parametrize(("options", "said"), [
    ({"mail_type": "END"}, "--mail-type sends no mail"),
    ({"time_min": 60}, "--time-min is not used"),
    ({"exclusive": True}, "--exclusive changes nothing"),
    ({"mem": "10G"}, "--mem is not used: the controller allots no host memory"),
    ({"mem_per_cpu": "2G"}, "--mem-per-cpu is not used"),
])
def test_a_flag_that_changes_nothing_that_matters_is_one_warning(options, said, capsys):
    assert unmodelled({"name": "n", **options}) == {"name": "n"}
    err = capsys.readouterr().err
    assert err.startswith(f"vipu: warning: {said}") and err.count("\n") == 1


@pytest.mark.parametrize(("options", "said"), [
    ({"priority": "10"}, "--priority is not taken: a job's priority is set after the submit, by an admin"),
    ({"open_mode": "replace"}, "--open-mode=replace: give truncate or append"),
    ({"kill_on_invalid_dep": "yes"}, "--kill-on-invalid-dep=yes is not taken"),
    ({"ntasks": "4"}, "-n/--ntasks=4 is not taken: a job runs its batch script once, as one task (1 is taken), on the"
     " IPUs --ipus N gives it; start its processes in the script with poprun --num-instances 4"),
    ({"ntasks_per_node": "2"}, "--ntasks-per-node=2 is not taken: a job runs its batch script once"),
    ({"gres": "ipu:4"}, "--gres is not taken: a job asks for IPUs with --ipus N, Graphcore's Slurm plugin's option"
     " (--gres=ipu:4 is --ipus 4)"),
])
def test_a_flag_that_would_not_do_what_it_says_is_refused_in_one_line(options, said, capsys):
    with pytest.raises(SystemExit) as e:
        unmodelled(options)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(f"vipu: error: {said}") and err.count("\n") == 1


def test_what_is_sbatchs_own_behaviour_is_taken_quietly(capsys):
    assert unmodelled({"open_mode": "append", "kill_on_invalid_dep": "no", "comment": "x"}) == {
        "open_mode": "append", "comment": "x"}  # --comment is kept with the job
    assert capsys.readouterr().err == ""


def test_directives_carry_them_as_the_flags_do():
    text = ("#!/bin/sh\n#SBATCH --comment='nightly run' --open-mode=append --exclusive --time-min=10\n"
            "#SBATCH --mem=10G\ntrue\n")
    assert parse_directives(text, "job.sh") == {"comment": "nightly run", "open_mode": "append", "exclusive": True,
                                                "time_min": 600, "mem": "10G"}


@pytest.mark.parametrize(("line", "said", "code"), [
    ("--priority=10", "vipu: error: job.sh line 3: #SBATCH --priority=10: --priority is not taken", 2),
    ("--open-mode=sideways", "vipu: error: job.sh line 3: #SBATCH --open-mode=sideways: --open-mode=sideways: give"
     " truncate or append", 2),
    ("--mail-type=END", "vipu: warning: job.sh line 3: #SBATCH --mail-type=END: --mail-type sends no mail", None),
])
def test_what_is_said_of_a_directive_names_its_script_and_line(capsys, line, said, code):
    origins: dict[str, str] = {}
    options = parse_directives(f"#!/bin/sh\n#SBATCH --ipus 1\n#SBATCH {line}\ntrue\n", "job.sh", origins)
    assert origins["ipus"] == "job.sh line 2: #SBATCH --ipus 1"
    if code is None:
        unmodelled(options, origins)
    else:
        with pytest.raises(SystemExit) as e:
            unmodelled(options, origins)
        assert e.value.code == code
    assert capsys.readouterr().err.startswith(said)


@pytest.mark.parametrize(("value", "on"), [
    ("", True), ("yes", True), ("YES", True), ("1", True), (" 2", True), ("-1", True), ("0", False), ("no", False),
    # strtol reads blanks before a number, not after; "yes" is compared whole (regression: both were stripped)
    ("1 ", False), (" ", False), (" yes", False), ("1e3", False), ("0x1", False),
])
def test_a_flags_variable_is_on_as_sbatch_reads_it(value, on):
    assert switched_on(value) is on


@pytest.mark.parametrize(("given", "variable", "wait"), [
    (False, None, False),  # neither: False, and SBATCH_WAIT not used (a script's #SBATCH -W decides)
    (False, "", True), (False, "yes", True), (False, "2", True),
    (False, "no", False),  # off: sbatch's reset, which an #SBATCH -W does not undo
    (True, "0", True),  # the command line's -W over the variable
])
def test_sbatch_wait_stands_in_for_w_as_sbatch_reads_it(monkeypatch, given, variable, wait):
    monkeypatch.delenv("SBATCH_WAIT", raising=False)
    if variable is not None:
        monkeypatch.setenv("SBATCH_WAIT", variable)
    values, used = from_environment({"wait": given})
    assert values["wait"] is wait
    assert ("SBATCH_WAIT" in used) == (variable is not None and not given)


@pytest.mark.parametrize(("variables", "requeue"), [
    ({}, None),  # neither: the script's line, else the spec's default
    ({"SBATCH_NO_REQUEUE": ""}, False), ({"SBATCH_REQUEUE": "yes"}, True),
    ({"SBATCH_NO_REQUEUE": "1", "SBATCH_REQUEUE": "1"}, True),  # sbatch reads SBATCH_REQUEUE last
    ({"SBATCH_NO_REQUEUE": "1", "SBATCH_REQUEUE": "no"}, True),  # its reset: the default, over the earlier one
    ({"SBATCH_NO_REQUEUE": "0"}, True),  # reset: the default, over an #SBATCH --no-requeue too
])
def test_the_requeue_variables_as_sbatch_reads_them(monkeypatch, variables, requeue):
    for name in ("SBATCH_REQUEUE", "SBATCH_NO_REQUEUE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert from_environment({"requeue": None})[0]["requeue"] is requeue
    assert from_environment({"requeue": False})[0]["requeue"] is False  # the command line's --no-requeue over both


def test_one_task_is_what_a_job_is_and_cpus_are_a_warning(capsys):
    assert unmodelled({"ntasks": 1, "ntasks_per_node": "1", "name": "n"}) == {"name": "n"}
    assert capsys.readouterr().err == ""
    assert unmodelled({"cpus_per_task": 8}) == {}
    assert capsys.readouterr().err.startswith("vipu: warning: -c/--cpus-per-task is not used: the controller allots"
                                              " no host CPUs")


def test_task_directives_are_read_and_refused_at_their_line(capsys):
    text = "#!/bin/sh\n#SBATCH -n 1 --ipus=4 -c 2\n#SBATCH --ntasks=8\ntrue\n"
    origins: dict[str, str] = {}
    options = parse_directives(text, "job.sh", origins)
    assert options == {"ntasks": 8, "ipus": 4, "cpus_per_task": 2}
    with pytest.raises(SystemExit):
        unmodelled(options, origins)
    assert capsys.readouterr().err.startswith("vipu: error: job.sh line 3: #SBATCH --ntasks=8: -n/--ntasks=8 is not"
                                              " taken")


@pytest.mark.parametrize(("options", "said"), [
    ({"mem": "lots"}, "--mem=lots is not a size: give megabytes or a unit, e.g. 4096 or 4G"),
    ({"mem_per_cpu": "G"}, "--mem-per-cpu=G is not a size"),
    ({"cpus_per_task": "0"}, "-c/--cpus-per-task=0 is not a count: give 1 or more"),
    ({"cpus_per_task": "x"}, "-c/--cpus-per-task=x is not a count"),
])
def test_a_warned_flags_value_is_still_checked_as_sbatch_checks_it(options, said, capsys):
    with pytest.raises(SystemExit):
        unmodelled(options)
    assert capsys.readouterr().err.startswith(f"vipu: error: {said}")


def test_well_formed_sizes_are_only_warned_of(capsys):
    assert unmodelled({"mem": "4096", "mem_per_cpu": "2g", "cpus_per_task": "4"}) == {}
    assert capsys.readouterr().err.count("vipu: warning:") == 3


def test_directive_warnings_come_in_the_scripts_line_order(capsys):
    """walk40: they came in the table's order (--mail-type before --mem whatever the script said first)."""
    origins: dict[str, str] = {}
    script = "#!/bin/sh\n#SBATCH --mem=4G\n#SBATCH --exclusive\n#SBATCH --mail-type=END\ntrue\n"
    unmodelled(parse_directives(script, "job.sh", origins), origins)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in lines] == ["job.sh line 2", "job.sh line 3", "job.sh line 4"], lines
