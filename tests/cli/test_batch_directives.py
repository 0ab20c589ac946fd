"""#SBATCH directives read as sbatch reads them, and refused naming the file, the line and the fix."""

from __future__ import annotations

import pytest

from vipu.cli.batch_directives import DirectiveError, directive_lines, parse_directives


def script(*lines: str) -> str:
    return "\n".join(["#!/bin/bash", *lines, "echo done"]) + "\n"


@pytest.mark.parametrize(("lines", "want"), [
    (["#SBATCH -J train"], {"name": "train"}),
    (["#SBATCH -Jtrain"], {"name": "train"}),  # -ovalue
    (["#SBATCH --job-name=train"], {"name": "train"}),
    (["#SBATCH --job-name train"], {"name": "train"}),
    (["#SBATCH --job=train"], {"name": "train"}),  # an unambiguous abbreviation, as getopt_long takes it
    (["#SBATCH -t 90"], {"time_limit": 5400}),  # minutes
    (["#SBATCH --time=1-00:00:00"], {"time_limit": 86400}),
    (["#SBATCH -o out/%x-%j.out -e err-%j.txt"], {"output": "out/%x-%j.out", "error": "err-%j.txt"}),
    (["#SBATCH --array=0-9%2 -d afterok:3"], {"array": "0-9%2", "dependency": "afterok:3"}),
    (["#SBATCH -q high --nice=5"], {"qos": "high", "nice": 5}),
    (["#SBATCH --nice"], {"nice": 100}),  # sbatch's default adjustment
    (["#SBATCH --nice -J x"], {"nice": 100, "name": "x"}),  # an option next: the default
    (["#SBATCH --nice 5"], {"nice": 5}),  # a whole number next is the value, as on vipu submit's command line
    (["#SBATCH --nice -5"], {"nice": -5}),  # (the controller refuses it from all but an admin)
    (["#SBATCH -b now+10m"], {"begin": "now+10m"}),
    (["#SBATCH -H"], {"hold": True}),
    (["#SBATCH --hold"], {"hold": True}),
    (["#SBATCH --requeue"], {"requeue": True}),
    (["#SBATCH --no-requeue"], {"requeue": False}),
    (["#SBATCH -D /scratch/run"], {"chdir": "/scratch/run"}),
    (["#SBATCH --export=ALL,FOO=1"], {"export": "ALL,FOO=1"}),
    (["#SBATCH --ipus=16"], {"ipus": 16}),
    (["#SBATCH -A research -p big"], {"account": "research", "allocation": "big"}),
    (["#SBATCH -J 'two words'"], {"name": "two words"}),  # quoted as in a shell (the controller judges the name)
    (["#SBATCH -J a#b  # a comment"], {"name": "a#b"}),  # `#` starts a comment only at a word's start
    (["#SBATCH\t-J tabbed"], {"name": "tabbed"}),
    (["#SBATCH -J first", "#SBATCH -J second"], {"name": "second"}),  # the later one wins
    (["", "# a comment", "#SBATCH -J after-comments"], {"name": "after-comments"}),
    (["##SBATCH -J disabled", "# SBATCH -J disabled", "#SBATCHX -J no", " #SBATCH -J indented"], {}),
    (["#SBATCH"], {}),
])
def test_directives_before_the_first_command(lines, want):
    assert parse_directives(script(*lines), "job.sh") == want


def test_directives_after_the_first_command_are_ignored():
    text = "#!/bin/sh\n#SBATCH -J early\n\nhostname\n#SBATCH -J late\n#SBATCH --mem=4G\n"
    assert directive_lines(text) == [(2, "-J early")]
    assert parse_directives(text, "job.sh") == {"name": "early"}


@pytest.mark.parametrize(("line", "said"), [
    ("#SBATCH --licenses=db", "--licenses is not an option vipu-sim takes; remove the line, or make it a comment"
     " (##SBATCH)"),
    ("#SBATCH --workdir=/tmp", "--workdir is not an option vipu-sim takes; use -D/--chdir"),
    ("#SBATCH --time-limit=10", "use -t/--time (Slurm's format: a bare number is minutes)"),
    ("#SBATCH -t abc", "'abc' is not a Slurm time; use minutes (90), MM:SS"),
    ("#SBATCH --time=10m", "'10m' is not a Slurm time"),
    ("#SBATCH -t", "-t needs a value, e.g. -t VALUE"),
    ("#SBATCH --hold=yes", "--hold takes no value; write --hold alone"),
    ("#SBATCH --ipus=0", "'0' is not a whole number of at least 1"),
    ("#SBATCH --ipus=four", "'four' is not a whole number of at least 1"),
    ("#SBATCH --nice=high", "'high' is not a whole number"),
    ("#SBATCH --array=0-x", "'0-x' is not a task index or range"),
    ("#SBATCH -d afterfoo:1", "unknown dependency type 'afterfoo'"),
    ("#SBATCH -b 10m", "ambiguous"),
    ("#SBATCH --export=ALL,NONE", "NONE passes none of the environment on and ALL all of it"),
    ("#SBATCH -J ''", "the value is empty"),
    ("#SBATCH -J 'unclosed", "No closing quotation; close the quote"),
    ("#SBATCH train", "'train' is not an option; a directive holds options only"),
    ("#SBATCH --n", "--n is ambiguous: it may be --nice or --no-requeue"),
])
def test_a_bad_directive_is_refused_naming_the_file_line_and_directive(line, said):
    with pytest.raises(DirectiveError) as refused:
        parse_directives(script("#SBATCH -J fine", "", line), "jobs/run.sh")
    message = str(refused.value)
    assert message.startswith(f"jobs/run.sh line 4: {line.strip()}: "), message
    assert said in message
