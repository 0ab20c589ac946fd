"""`vipu submit`'s command line as typer reads it: its options are sbatch_options.py's, made typer's here; what it
sends is submit.py's."""

from __future__ import annotations

import inspect

import typer
from typer.core import TyperCommand

from vipu.cli.context import JSON_HELP
from vipu.cli.params import PAST, WireInt
from vipu.cli.sbatch_options import FLAG, INT, OPTIONS, SWITCH, SbatchOption, bare_before
from vipu.cli.slurm_time import FORMS
from vipu.cli.spec_files import script_words, starts_script
from vipu.cli.submit import submit_jobs

TYPES = {FLAG: bool, SWITCH: bool, INT: int}  # else str
HELP_WORDS = {"FORMS": FORMS, "JSON_HELP": JSON_HELP}  # help texts name these as {FORMS}


def typer_option(option: SbatchOption) -> inspect.Parameter:
    names = (f"{option.names[0]}/{option.off[0]}", *option.names[1:]) if option.off else option.names
    help_text = option.help.format_map(HELP_WORDS) if option.help else None
    bounded = {"click_type": WireInt(past=PAST[option.past])} if option.past else {}
    return inspect.Parameter(option.param, inspect.Parameter.KEYWORD_ONLY, annotation=TYPES.get(option.kind, str),
                             default=typer.Option(option.default, *names, help=help_text, **bounded))


def command_line(args: list[str]) -> list[str]:
    """The command line as click is to read it. Options end at the batch script, as sbatch's getopt ends them: the
    words after it are the script's, `-t 5` too (`job.sh -- ARGS` stays vipu's: that -- is dropped); spec files
    may have options after them. And each option that takes an optional value (sbatch's --nice) is given its bare
    value where it has none (`--nice job.sh` -> `--nice=100 job.sh`; sbatch_options.bare_before says when), since
    click reads an option's value as the next word, whatever it is, and its own optional values take no negative
    number (`--nice -5`)."""
    out, i, first = [], 0, True
    while i < len(args) and args[i] != "--":  # after --: the script's own arguments
        word = args[i]
        option = VALUED.get(word)
        if option is not None and bare_before(option.bare, args[i + 1] if i + 1 < len(args) else None):
            out.append(f"{word}={option.bare}")
            i += 1  # the next word is read in its own turn
        elif option is not None or value_next(word):
            out += args[i:i + 2]  # the option and its value
            i += 2
        elif word.startswith("-") and word != "-" or not first:
            out.append(word)
            i += 1
        elif starts_script(word):
            return [*out, "--", *script_words(word, args[i + 1:])]
        else:  # a spec file, or what is neither (said later): options may follow
            out.append(word)
            i, first = i + 1, False
    return out + args[i:]


def value_next(word: str) -> bool:
    """Whether `word` is a cluster of short options whose last takes a value, which is then the next word, as click
    (and getopt) read `-HJ name`; `-HJname` has it attached."""
    if word[:1] != "-" or word[1:2] in ("", "-"):
        return False
    for k, letter in enumerate(word[1:], 1):
        if f"-{letter}" in VALUED:
            return k == len(word) - 1
    return False


# the names that take a value as the next word (--name=VALUE and -JVALUE are one word)
VALUED = {name: o for o in OPTIONS if o.kind not in (FLAG, SWITCH) for name in o.names}


class SubmitCommand(TyperCommand):
    """vipu submit, its command line read through command_line first."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, command_line(args))


def register(app: typer.Typer) -> None:
    def submit(ctx: typer.Context, specs: list[str], **flags):
        """Queue a job (sbatch): a batch script, a command (--wrap), spec files, or the flags alone. Prints the job
        id.

        A batch script's #SBATCH lines before its first command are read as sbatch reads them; the flags win over
        them, and sbatch's input variables (SBATCH_JOB_NAME, SBATCH_TIMELIMIT, ...) come between: a flag wins over
        its variable, the variable over the #SBATCH line. Several spec files: a job each, in one call, all queued or
        none (a refusal names its file); flags apply to all."""
        submit_jobs(ctx.obj, specs, **flags)

    specs = inspect.Parameter(
        "specs", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=list[str],
        default=typer.Argument(
            None, metavar="[SCRIPT [ARGS]... | SPEC...]", show_default=False,
            help="a batch script (its first line #!) and its arguments, every word after it (vipu's options end there, as"
                 " sbatch's); or YAML or"
                 " JSON job specs, each its own job, all queued or none ('-' reads one, or a script, from stdin);"
                 " omit to read a piped one (as sbatch) or, with nothing piped or with --duration, to use the flags"))
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    # typer reads a command's options from its signature: this one's are the table's
    signature = inspect.Signature([context, specs, *map(typer_option, OPTIONS)])
    submit.__signature__ = signature  # type: ignore[attr-defined]
    app.command(cls=SubmitCommand)(submit)
