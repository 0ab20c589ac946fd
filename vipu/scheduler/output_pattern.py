"""Where a job's output goes: Slurm's filename patterns in `output`, filled in for one job.

Why a Protocol, not the job record: `vipu show job` fills the patterns in too (StdOut=, as scontrol), from the API's
Job, without loading the controller's models.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

_PATTERN = re.compile(r"%(%|(\d*)([jJAasnNtxu]))")
NUMERIC = "jJAant"  # a width pads these with zeros (%4j: 0032); sbatch ignores one on a name
NO_TASK = str(0xFFFFFFFE)  # %a outside an array: Slurm's NO_VAL, as sbatch writes it
BATCH_STEP = "batch"  # the batch script's step, as sacct names it (77.batch)
DEFAULT_OUTPUT = "slurm-%j.out"  # sbatch's, in the working directory
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"  # an array task's


class Named(Protocol):
    """What the patterns name of a job (a job record has it all)."""

    id: int
    array_job_id: int | None
    array_task_id: int | None
    name: str
    user: str


def output_path(pattern: str, job: Named, node: str | None = None) -> str:
    """%j job id, %A array job id (the job id outside an array), %a array task (4294967294 outside one, as Slurm's),
    %J job id and step (for the batch script's files the job id alone, 77, as Slurm 22.05 writes them), %s step
    (batch: the script is the batch step), %n node and %t task within the job (0: the script runs once, on its first
    node), %N that node's name (`node`; kept as written until the job has
    one), %x job name, %u user, %% a percent sign; a width after the % zero-pads a number to at most 10 digits (%4j:
    0032, %3a: 007), as sbatch's; any other %-sequence is kept as written."""
    job_id = str(job.id)
    values = {
        "j": job_id,
        "J": job_id,  # job id and step, but the batch script's step is none: slurmstepd writes the job id alone
        "A": str(job.array_job_id if job.array_job_id is not None else job.id),
        "a": str(job.array_task_id) if job.array_task_id is not None else NO_TASK,
        "s": BATCH_STEP,
        "n": "0",
        "t": "0",
        "x": job.name,
        "u": job.user,
    }

    def filled(m: re.Match) -> str:
        if m.group(1) == "%":
            return "%"
        width, key = m.group(2), m.group(3)
        if key == "N":
            return node if node is not None else m.group(0)
        value = values[key]
        value = value.zfill(min(int(width), 10)) if width and key in NUMERIC else value
        return value

    return _PATTERN.sub(filled, pattern)


def output_file(pattern: str | None, job: Named, workdir: str, node: str | None = None) -> str:
    """A program's output file: its pattern (None: sbatch's default) filled in for the job on its first node `node`,
    relative to its working directory."""
    if pattern is None:
        pattern = DEFAULT_ARRAY_OUTPUT if job.array_job_id is not None else DEFAULT_OUTPUT
    return os.path.join(workdir, output_path(pattern, job, node))
