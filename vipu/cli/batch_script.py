"""A batch script (or a --wrap command) as a job spec with a `command` workload, made as sbatch makes its job.

What is captured here, at submit, as sbatch does: the script's text (the job keeps it, so a requeued job runs what
was submitted), the directory `vipu submit` runs in (SLURM_SUBMIT_DIR), the working directory (-D, made absolute),
the environment under --export with the soft resource limits (--propagate: resource_limits.py), and output paths
made absolute against the working directory (the controller has no directory of the user's). The job's name is the
script's file name unless -J gives one ("wrap" for --wrap, "sbatch" for a script on stdin), as sbatch names it.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from vipu.v1 import job_pb2 as j
from vipu.validation import MAX_SPEC_BYTES

if TYPE_CHECKING:
    from vipu.cli.sbatch_nodes import PodMachines

NOT_A_SCRIPT = ("This does not look like a batch script. The first line must start with #! followed by the path to"
                " an interpreter")
WRAP = "--wrap"  # the source of a --wrap script, in messages
NAMES = {"<stdin>": "sbatch", WRAP: "wrap"}  # sbatch's job names for a script from stdin, and for --wrap
NAME = re.compile(r"[^\x00-\x1f\x7f]{1,1024}")  # a job name the controller takes (partition/rules.py)


def is_batch_script(data: bytes) -> bool:
    return data.startswith(b"#!")


def wrapped(command: str) -> str:
    """sbatch --wrap's script around a command; BatchError for a command with nothing to run."""
    if not command.strip():
        raise BatchError("--wrap is empty; give the command to run, e.g. --wrap \"hostname\"")
    return f"#!/bin/sh\n# This script was created by vipu submit --wrap.\n\n{command}\n"


def default_name(source: str) -> str | None:
    """sbatch's job name for a script read from `source` (None: the name is not one the controller takes, so the
    spec's default is kept)."""
    if source in NAMES:
        return NAMES[source]
    name = os.path.basename(source)
    return name if NAME.fullmatch(name) else None


def absolute(path: str, base: str | None = None) -> str:
    """A path as sbatch takes it: relative to `base` (default: where the command runs; the controller has none)."""
    return path if path.startswith("/") else str(Path(base or Path.cwd()) / path)


def batch_spec(script: str, args: list[str], options: Mapping[str, object], cwd: str,
               environ: Mapping[str, str], name: str | None) -> dict:
    """The spec of a batch script: `options` are the spec's fields as the directives and flags give them (flags
    over directives), with chdir and export for the workload; `cwd` is where `vipu submit` runs."""
    fields = dict(options)
    chdir = fields.pop("chdir", None)
    chdir = absolute(str(chdir), cwd) if chdir is not None else None
    workdir = chdir or cwd
    for key in ("output", "error"):  # sbatch's are relative to the working directory
        if fields.get(key) is not None:
            fields[key] = absolute(str(fields[key]), workdir)
    from vipu.cli.export_env import exported  # here: `vipu submit` of a spec file, the common case, needs none of it

    environment = exported(str(fields.pop("export", "ALL")), environ)
    if name is not None:
        fields.setdefault("name", name)
    fields["workload"] = {"kind": "command", "script": script, "args": list(args), "submit_dir": cwd,
                          "chdir": chdir, "environment": environment}
    for key in ("open_mode", "signal"):  # the program's, as the workload takes them (command_spec.py)
        if fields.get(key) is not None:
            fields["workload"][key] = fields.pop(key)
    return fields


class BatchError(ValueError):
    """A batch script that cannot be submitted; the message says which and how to fix it."""


def script_size(directives: dict, origins: dict[str, str], machines: Callable[[], PodMachines]) -> dict:
    """The directives with #SBATCH -N's machines as IPUs, a refusal of it naming its line, as is one of those IPUs
    by the controller."""
    from vipu.cli.sbatch_nodes import FLAG, sized  # here: only -N needs it

    where = origins.pop("nodes")
    if "ipus" not in directives:
        origins["ipus"] = where
    try:
        return sized(directives, machines, f"{where}: {FLAG}")
    except ValueError as e:
        raise BatchError(str(e)) from None


def script_request(data: bytes, source: str, args: list[str], flags: Mapping[str, object],
                   request_id: str, machines: Callable[[], PodMachines],
                   origins: dict[str, str] | None = None,
                   rewords: list[Callable] | None = None, asked: dict | None = None) -> j.SubmitJobRequest:
    """The request for a batch script read from `source`, its directives under the command line's flags;
    `machines` the Pod's, asked for a directive -N (sbatch_nodes.py); `origins` gets the file and line of each
    field a directive set (see parse_directives); `rewords` gets how a refusal of the job's size is said when the
    size was asked in nodes (#SBATCH -N, or -w alone): in nodes, naming the line (sbatch_nodes.in_nodes); `asked` gets
    wait: True for an #SBATCH -W (what `vipu submit` does, not the job) where neither -W nor SBATCH_WAIT said (None)."""
    try:
        script = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BatchError(f"{source} is not UTF-8 text (bad byte at offset {e.start}); save the script as"
                         " UTF-8") from None
    from vipu.cli.batch_directives import parse_directives  # here, as exported above
    from vipu.cli.sbatch_unmodelled import unmodelled

    origins = {} if origins is None else origins
    directives = parse_directives(script, source, origins)
    if "ipus" in flags:  # the command line's size, --ipus or -N, over the script's either
        directives.pop("nodes", None)
        origins.pop("nodes", None)
    sized_in = None  # (the line, the -w list) that gave the job's size in nodes: a refusal of it is said so
    if "nodes" in directives:  # checked against the list the job gets: a -w flag's over the script's
        listed = {"nodelist": flags["nodelist"]} if "nodelist" in flags else {}
        sized_in = None if "ipus" in directives else (origins["nodes"], None)
        directives = script_size({**directives, **listed}, origins, machines)
    for key in flags:  # a flag over a directive: what is said of the value is said of the flag
        origins.pop(key, None)
    options = unmodelled({**directives, **flags}, origins)
    if options.pop("wait", False) and asked is not None and asked["wait"] is None:  # -W and SBATCH_WAIT over it
        asked["wait"] = True
    if "ipus" not in options and "nodelist" in options:  # -w alone: its nodes are the job's size
        from vipu.cli.sbatch_nodes import LIST_FLAG, sized_by_list

        where = origins.get("nodelist")
        try:
            options = sized_by_list(options, machines, f"{where}: {LIST_FLAG}" if where else LIST_FLAG)
        except ValueError as e:
            raise BatchError(str(e)) from None
        if where:
            origins["ipus"] = where
        sized_in = (where, options["nodelist"])
    if "ipus" not in options and source == WRAP:
        raise BatchError("--wrap asks for no IPUs; give vipu submit --ipus N, or -N N for N IPU-Machines")
    if "ipus" not in options:
        raise BatchError(f"{source} asks for no IPUs; add a line `#SBATCH --ipus=N` (or `#SBATCH -N N`, IPU-Machines)"
                         " before its first command, or give vipu submit --ipus N")
    from vipu.jobs.programs.resource_limits import submitted

    # SLURM_SUBMIT_HOST and the soft limits (SLURM_RLIMIT_*) as sbatch sets them, in its own environment before
    # --export picks (SLURM_* always pass on)
    environ = {**os.environ, "SLURM_SUBMIT_HOST": socket.gethostname(), **submitted(options.pop("propagate", None))}
    spec = batch_spec(script, args, options, os.getcwd(), environ, default_name(source))
    body = json.dumps(spec).encode()
    if len(body) > MAX_SPEC_BYTES:
        raise BatchError(f"{source} with its environment is {len(body):,} bytes; a job spec may be at most"
                         f" {MAX_SPEC_BYTES:,}: pass fewer variables on (--export=NONE or a list) or keep data in"
                         " files the script reads")
    if sized_in is not None and rewords is not None:
        from vipu.cli.sbatch_nodes import in_nodes

        rewords.append(in_nodes(options["ipus"], sized_in[1], sized_in[0]))
    return j.SubmitJobRequest(spec=body, source=source, request_id=request_id)
