"""`vipu queue` and `vipu submit` in their common forms, read without typer: the same functions called with the
same values typer would pass them, so the same output and exit codes, at a fraction of the start-up time.

Why: Slurm users run squeue and sbatch in loops, and importing typer and building the whole app took most of each
call (bench/bench_cli.py). What it reads: the command right after `vipu` (no root options before it), its text and
on/off flags as `--name value`, `--name=value` or `-x value`, and for submit any number of files, or a batch script
and its words (its own, whatever they are, as submit_command.py reads them). Anything else
(--help, an integer flag, `-uX`, `--`, a value that starts with -, an unknown word, shell completion) returns to
main.run, which runs the typer app as always, so help, completion and every usage error stay typer's.
tests/cli/test_fast_path.py checks these tables against the typer commands' options, and the two paths' output.
A command run here ends through `leave`: os._exit once its output is flushed, without the interpreter's teardown.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from typing import NoReturn

FLAG, OFF, TEXT, TEXTS = "flag", "off", "text", "texts"  # on, off, one string, a string each time given
ATTACHED = "attached"  # a string only as --name=value: alone, its bare value is typer's app's (--propagate)

# (parameter of queue_jobs, kind, the option's names): queue_command.py's options but --iterate (an integer)
QUEUE = (
    ("user", TEXTS, ("--user", "-u", "--users")),
    ("me", FLAG, ("--me",)),
    ("state", TEXTS, ("--states", "-t", "--state")),
    ("jobs", TEXTS, ("--jobs", "-j")),
    ("array", FLAG, ("--array", "-r")),
    ("name", TEXTS, ("--name", "-n")),
    ("partition", TEXTS, ("--partition", "-p")),
    ("qos", TEXTS, ("--qos", "-q")),
    ("account", TEXTS, ("--account", "-A")),
    ("nodelist", TEXTS, ("--nodelist", "-w")),
    ("fmt", TEXT, ("--format", "-o")),
    ("names", TEXT, ("--Format", "-O")),
    ("long", FLAG, ("--long", "-l")),
    ("sort", TEXT, ("--sort", "-S")),
    ("start", FLAG, ("--start",)),
    ("json_out", FLAG, ("--json", "--showjson")),
    ("no_header", FLAG, ("--noheader", "-h", "--no-header")),
)


def _submit() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """vipu submit's options (sbatch_options.py) but its integers, --ipus and --nice: typer's app checks those
    against the wire. Read only for submit: `vipu queue` needs none of it."""
    from vipu.cli.sbatch_options import INT, OPTIONS, SWITCH

    rows = []
    for option in OPTIONS:
        if option.kind == SWITCH:
            rows += [(option.param, FLAG, option.names), (option.param, OFF, option.off)]
        elif option.kind != INT:
            kind = FLAG if option.kind == FLAG else TEXT if option.bare is None else ATTACHED
            rows.append((option.param, kind, option.names))
    return tuple(rows)


COMMANDS = {"queue": lambda: QUEUE, "submit": _submit}  # each command's table: (parameter, kind, names)
FILES = {"submit": "specs"}  # the parameter that takes a command's words (queue takes none)


def read(args: list[str]) -> tuple[str, dict] | None:
    """The command and its parameters as typer would pass them (those not given left to the function's defaults,
    which are typer's), or None when the command line is not one this module reads."""
    if not args or args[0] not in COMMANDS or any(k.endswith("_COMPLETE") for k in os.environ):
        return None
    command = args[0]
    options = {name: (param, kind) for param, kind, names in COMMANDS[command]() for name in names}
    values: dict = {}
    words = iter(args[1:])
    for word in words:
        if not word.startswith("-") or word == "-":  # click reads a lone - as a word (stdin)
            if command not in FILES:
                return None
            from vipu.cli.spec_files import script_words, starts_script

            if FILES[command] not in values and starts_script(word):  # its words are its own (submit_command.py)
                values[FILES[command]] = script_words(word, list(words))
                break
            values.setdefault(FILES[command], []).append(word)
            continue
        name, given, value = word.partition("=")
        if name not in options or (given and not name.startswith("--")):
            return None
        param, kind = options[name]
        if kind in (FLAG, OFF):
            if given:
                return None
            values[param] = kind == FLAG
            continue
        if not given:
            if kind == ATTACHED:
                return None
            value = next(words, None)
            if value is None or value.startswith("-"):
                return None
        if kind == TEXTS:
            values.setdefault(param, []).append(value)
        else:
            values[param] = value
    if values.get("me") and values.get("user"):  # which of them holds depends on their order: typer's app knows it
        return None
    return command, values


def run_fast(args: list[str]) -> None:
    """Run the command and end the process as failure.run_app would, or return if `read` does not read it."""
    found = read(args)
    if found is None:
        return
    command, values = found
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as run_app: a reader that goes away ends us silently
    from vipu.cli.connection import DEFAULT_TIMEOUT_S, Cli, Connection, resolve

    cli = Cli(Connection("vipu", resolve("vipu"), DEFAULT_TIMEOUT_S), json=False, header=True)
    try:
        if command == "queue":
            from vipu.cli.queue_listing import queue_jobs

            queue_jobs(cli, **values)
        else:
            from vipu.cli.submit import submit_jobs

            submit_jobs(cli, **values)
    except KeyboardInterrupt:  # typer's main: exit 130
        raise SystemExit(130) from None
    except EOFError:  # click's Abort, as run_app prints it
        print(file=sys.stderr)
        print("Aborted!", file=sys.stderr)
        raise SystemExit(1) from None
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        raise SystemExit(1) from None
    raise SystemExit(0)


def leave(code) -> NoReturn:
    """End the process with `code` once stdout and stderr are flushed, as Python ends it, but without tearing the
    interpreter down. Why: that teardown (every module's objects, gRPC's own) took about 30 ms of CPU per call on
    this project's VM, as long as the whole command's own work (bench/bench_cli.py prints both). Nothing of these
    commands is left to it: they write no files and register no exit handlers. A flush that fails (stdout closed)
    is left to Python, which reports it as it always has."""
    if code is None or isinstance(code, int):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - Python's own exit reports it
            raise SystemExit(code) from None
        os._exit(code or 0)
    raise SystemExit(code)
