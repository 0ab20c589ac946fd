"""A batch script's #SBATCH directives, read as sbatch reads them.

Which lines: those starting with `#SBATCH` before the first command line (neither blank nor a comment); sbatch
ignores directives after it, and so does this. Each line holds options as on the command line: short or long,
`--opt=value`, `--opt value`, `-o value`, `-ovalue`, several per line, `#` after them a comment, quotes as in a shell.
Each value is checked here, so a bad one is refused naming its file and line, not later as a field of the spec.

The result maps option keys (the fields sbatch_options.py gives vipu submit's flags) to checked values; the flags
given on the command line are put over it (they win, as sbatch's do).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable

from vipu.cli.export_env import check_export
from vipu.cli.sbatch_nodes import node_count
from vipu.cli.sbatch_options import ON, SbatchOption, bare_before
from vipu.cli.sbatch_options import OPTIONS as SBATCH_OPTIONS
from vipu.cli.slurm_time import slurm_limit

DIRECTIVE = "#SBATCH"
_DIRECTIVE = re.compile(r"#SBATCH(?:\s|$)")  # at the start of the line, as sbatch; ##SBATCH is a comment


def _text(value: str) -> str:
    if not value:
        raise ValueError("the value is empty; give one")
    return value


def _count(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ValueError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def _nice(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number (e.g. --nice=100)") from None


def _checked(module: str, function: str) -> Callable[[str], str]:
    """A value the controller's own parser accepts (array, dependency, begin), kept as written."""
    def check(value: str) -> str:
        import importlib

        getattr(importlib.import_module(module), function)(value)  # raises ValueError saying what is wrong
        return value
    return check


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # as on sbatch's command line: -J, --job-name
    key: str  # the spec field (or chdir, export, one sbatch_unmodelled says) it sets
    convert: Callable[[str], object] | None  # None: a flag, taking no value
    value: object = None  # a flag's value; an optional value's default (--nice)


# a #SBATCH option's value, by the name sbatch_options.SbatchOption.reads gives it
READERS: dict[str, Callable[[str], object]] = {
    "text": _text, "count": _count, "nice": _nice, "time": slurm_limit, "export": check_export,
    "array": _checked("vipu.scheduler.arrays", "parse_array"),
    "dependency": _checked("vipu.scheduler.deps", "parse_dependency"),
    "begin": _checked("vipu.scheduler.begin", "parse_begin"),
    "hostlist": _checked("vipu.partition.node_names", "expand"), "nodes": node_count,
    "propagate": _checked("vipu.jobs.programs.resource_limits", "chosen"),
}


def _directives(option: SbatchOption) -> list[Option]:
    """The #SBATCH options of one of vipu submit's: a switch's off names its own, set to False."""
    if option.reads is None:
        return []
    if option.reads == ON:
        off = tuple(n for n in option.off if n not in option.vipu_only)
        return [Option(option.sbatch_names, option.field, None, True)] + \
            ([Option(off, option.field, None, False)] if off else [])
    return [Option(option.sbatch_names, option.field, READERS[option.reads], option.bare)]


OPTIONS = [directive for option in SBATCH_OPTIONS for directive in _directives(option)]
BY_NAME = {name: option for option in OPTIONS for name in option.names}
# what sbatch users write that has another spelling here
INSTEAD = {"--time-limit": "-t/--time (Slurm's format: a bare number is minutes)", "--name": "-J/--job-name",
           "--workdir": "-D/--chdir", "--wrap": "a command line in the script itself"}


def _abbreviated(name: str) -> Option | None:
    """The option a long name abbreviates, if it names one only (sbatch's getopt_long takes --dep for
    --dependency)."""
    if not name.startswith("--") or len(name) < 3:
        return None
    found = {o.names[-1]: o for n, o in BY_NAME.items() if n.startswith("--") and n.startswith(name)}
    if len(found) > 1:
        raise ValueError(f"{name} is ambiguous: it may be {' or '.join(sorted(found))}; write the option in full")
    return next(iter(found.values()), None)


class DirectiveError(ValueError):
    """A directive that cannot be taken: the message names the file, the line and the directive, and the fix."""


def directive_lines(script: str) -> list[tuple[int, str]]:
    """(line number, text after #SBATCH) of the directives sbatch reads: those before the first command line."""
    found = []
    for number, line in enumerate(script.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break  # the first command: the directives end here
        m = _DIRECTIVE.match(line)
        if m:
            found.append((number, line[m.end():]))
    return found


def parse_directives(script: str, source: str, origins: dict[str, str] | None = None) -> dict[str, object]:
    """The options a script's directives give, a later one over an earlier one (as sbatch). `origins`, if given,
    gets each option's file, line and directive, so a refusal of its value by the controller can name them."""
    options: dict[str, object] = {}
    for number, text in directive_lines(script):
        where = f"{source} line {number}: {DIRECTIVE} {text.strip()}"
        try:
            words = shlex.split(_uncommented(text))
        except ValueError as e:  # an unclosed quote
            raise DirectiveError(f"{where}: {e}; close the quote") from None
        while words:
            word = words.pop(0)
            try:
                key, value = _one(word, words)
            except ValueError as e:
                raise DirectiveError(f"{where}: {e}") from None
            options[key] = value
            if origins is not None:
                origins[key] = where
    return options


def _uncommented(text: str) -> str:
    """`text` up to a `#` that starts a word outside quotes (a comment, as in a shell: a#b is one word)."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i]
    return text


def _one(word: str, rest: list[str]) -> tuple[str, object]:
    """The option `word` starts (taking its value from `rest` if it is a separate word): (key, checked value)."""
    if word.startswith("--"):
        name, eq, attached = word.partition("=")
        attached = attached if eq else None
    elif word.startswith("-") and len(word) > 1:
        name, attached = word[:2], word[2:] or None
    else:
        raise ValueError(f"{word!r} is not an option; a directive holds options only, such as -J NAME or --time=10")
    option = BY_NAME.get(name) or _abbreviated(name)
    if option is None:
        instead = f"use {INSTEAD[name]}" if name in INSTEAD else "remove the line, or make it a comment (##SBATCH)"
        known = " ".join(sorted({o.names[-1] for o in OPTIONS}))
        raise ValueError(f"{name} is not an option vipu-sim takes; {instead} (it takes {known})")
    if option.convert is None:
        if attached is not None:
            raise ValueError(f"{name} takes no value; write {name} alone")
        return option.key, option.value
    if attached is None and bare_before(option.value, rest[0] if rest else None):
        return option.key, option.value  # --nice without a value
    if attached is None:
        if not rest:
            raise ValueError(f"{name} needs a value, e.g. {name}{'=' if name.startswith('--') else ' '}VALUE")
        attached = rest.pop(0)
    try:
        return option.key, option.convert(attached)
    except ValueError as e:  # the array parser names the value twice: '0-x': '0-x' is not ...
        raise ValueError(str(e).removeprefix(f"{attached!r}: ")) from None
