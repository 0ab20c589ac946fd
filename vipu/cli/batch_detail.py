"""What `vipu show job` shows of a batch script's job, as scontrol does: Command, WorkDir, StdErr, StdIn and StdOut
(the output patterns filled in for the job, as scontrol fills them), and the script itself (`--script`, as
`scontrol write batch_script`).

Why Command is not a path: the job keeps the script's text, not the file it came from (which may have changed or
gone since), so it shows "(batch script)" and the script's arguments; `vipu show job ID --script` prints the text.
"""

from __future__ import annotations

import os
import shlex
import sys
from types import SimpleNamespace

from vipu.cli.failure import BAD_INPUT, NOT_FOUND, fail
from vipu.scheduler.output_pattern import output_file, output_path
from vipu.v1 import job_pb2 as j

KIND = "command"


def batch_fields(x: j.Job, spec: dict, node: str | None = None) -> list[tuple[str, object]]:
    """scontrol's lines for a batch script's job; [] for a job of another workload. `node`: its first node, for
    %N."""
    work = spec.get("workload") or {}
    if work.get("kind") != KIND:
        return []
    names = _names(x)
    workdir = work.get("chdir") or work["submit_dir"]
    stdout = output_file(spec.get("output"), names, workdir, node)
    stderr = output_file(spec["error"], names, workdir, node) if spec.get("error") else stdout
    command = " ".join(["(batch script)", *(shlex.quote(a) for a in work.get("args") or [])])
    # OpenMode is vipu's (scontrol shows none): append only, truncate being sbatch's default
    append = [("OpenMode", "append")] if work.get("open_mode") == "append" else []
    return [("Command", command), ("WorkDir", workdir), ("StdErr", stderr), ("StdIn", "/dev/null"),
            ("StdOut", stdout), *append]


def built_in_stdout(x: j.Job, spec: dict) -> str:
    """StdOut= of a built-in workload's job: its output pattern filled in as the controller fills it when it writes
    the file (control/output_files.py: %N kept as written); (null): none."""
    pattern = spec.get("output")
    if not pattern:
        return "(null)"
    return os.path.join(spec.get("submit_dir") or "", output_path(pattern, _names(x)))


def _names(x: j.Job) -> SimpleNamespace:
    """What the output patterns read of a job (%j, %A, %a, %x, %u)."""
    task = x.HasField("array_job_id")
    return SimpleNamespace(id=x.id, array_job_id=x.array_job_id if task else None,
                           array_task_id=x.array_task_id if task else None, name=x.name, user=x.user)


def print_script(x: j.Job, asked: str, json_out: bool) -> None:
    """The job's batch script exactly as submitted, or a refusal for a job that has none."""
    if json_out:
        fail("vipu", "--script prints the script as it is; leave out --json (--json alone has it in"
             " spec.workload.script)", BAD_INPUT)
    kind = x.spec.workload.WhichOneof("kind") or "hold"
    if kind != KIND:
        fail("vipu", f"job {asked} has no batch script: it runs a {kind} workload, not a script (vipu show job"
             f" {asked} shows its spec)", NOT_FOUND)
    sys.stdout.write(x.spec.workload.command.script)
    sys.stdout.flush()
