"""`vipu queue` and `vipu submit` in their common forms, read without typer: the same functions called with the
same values typer would pass them, so the same output and exit codes, at a fraction of the start-up time.

Why: Slurm users run squeue and sbatch in loops, and importing typer and building the whole app took most of each
call (bench/bench_cli.py). What it reads: the command right after `vipu` (no root options before it), its text and
on/off flags as `--name value`, `--name=value` or `-x value`, and for submit any number of files. Anything else
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

# submit_command.py's options but --ipus and --nice (integers, checked against the wire by typer's app)
SUBMIT = (
    ("name", TEXT, ("--job-name", "-J", "--name")),
    ("time", TEXT, ("--time", "-t")),
    ("time_limit", TEXT, ("--time-limit",)),
    ("duration", TEXT, ("--duration",)),
    ("wrap", TEXT, ("--wrap",)),
    ("qos", TEXT, ("--qos", "-q")),
    ("user", TEXT, ("--user",)),
    ("account", TEXT, ("--account", "-A")),
    ("dependency", TEXT, ("--dependency", "-d")),
    ("array", TEXT, ("--array", "-a")),
    ("hold", FLAG, ("--hold", "-H")),
    ("hold", OFF, ("--no-hold",)),
    ("begin", TEXT, ("--begin", "-b")),
    ("requeue", FLAG, ("--requeue",)),
    ("requeue", OFF, ("--no-requeue",)),
    ("allocation", TEXT, ("--allocation", "--partition", "-p")),
    ("nodelist", TEXT, ("--nodelist", "-w")),
    ("exclude", TEXT, ("--exclude", "-x")),
    ("output", TEXT, ("--output", "-o")),
    ("error_file", TEXT, ("--error", "-e")),
    ("chdir", TEXT, ("--chdir", "-D")),
    ("export", TEXT, ("--export",)),
    ("request_id", TEXT, ("--request-id",)),
    ("parsable", FLAG, ("--parsable",)),
    ("test_only", FLAG, ("--test-only",)),
    ("json_out", FLAG, ("--json", "--showjson")),
    ("open_mode", TEXT, ("--open-mode",)),
    ("comment", TEXT, ("--comment",)),
    ("mail_type", TEXT, ("--mail-type",)),
    ("mail_user", TEXT, ("--mail-user",)),
    ("time_min", TEXT, ("--time-min",)),
    ("exclusive", FLAG, ("--exclusive",)),
    ("nodes", TEXT, ("--nodes", "-N")),
    ("ntasks", TEXT, ("--ntasks", "-n")),
    ("ntasks_per_node", TEXT, ("--ntasks-per-node",)),
    ("cpus_per_task", TEXT, ("--cpus-per-task", "-c")),
    ("mem", TEXT, ("--mem",)),
    ("mem_per_cpu", TEXT, ("--mem-per-cpu",)),
    ("gres", TEXT, ("--gres",)),
    ("priority", TEXT, ("--priority",)),
    ("signal", TEXT, ("--signal",)),
    ("kill_on_invalid_dep", TEXT, ("--kill-on-invalid-dep",)),
)

COMMANDS = {"queue": QUEUE, "submit": SUBMIT}
FILES = {"submit": "specs"}  # the parameter that takes a command's words (queue takes none)


def read(args: list[str]) -> tuple[str, dict] | None:
    """The command and its parameters as typer would pass them (those not given left to the function's defaults,
    which are typer's), or None when the command line is not one this module reads."""
    if not args or args[0] not in COMMANDS or any(k.endswith("_COMPLETE") for k in os.environ):
        return None
    command, options = args[0], {name: (param, kind) for param, kind, names in COMMANDS[args[0]] for name in names}
    values: dict = {}
    words = iter(args[1:])
    for word in words:
        if not word.startswith("-") or word == "-":  # click reads a lone - as a word (stdin)
            if command not in FILES:
                return None
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
