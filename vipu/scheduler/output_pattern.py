"""Where a job's output goes: Slurm's filename patterns in `output`, filled in for one job.

Why a Protocol, not the job record: `vipu show job` fills the patterns in too (StdOut=, as scontrol), from the API's
Job, without loading the controller's models.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

_PATTERN = re.compile(r"%(%|(\d*)([jAaxu]))")
NUMERIC = "jAa"  # a width pads these with zeros (%4j: 0032); sbatch ignores one on a name
DEFAULT_OUTPUT = "slurm-%j.out"  # sbatch's, in the working directory
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"  # an array task's


class Named(Protocol):
    """What the patterns name of a job (a job record has it all)."""

    id: int
    array_job_id: int | None
    array_task_id: int | None
    name: str
    user: str


def output_path(pattern: str, job: Named) -> str:
    """%j job id, %A array job id (the job id outside an array), %a array task (empty outside one), %x job name,
    %u user, %% a percent sign; a width after the % zero-pads a number to at most 10 digits (%4j: 0032, %3a: 007),
    as sbatch's; any other %-sequence is kept as written."""
    values = {
        "j": str(job.id),
        "A": str(job.array_job_id if job.array_job_id is not None else job.id),
        "a": str(job.array_task_id) if job.array_task_id is not None else "",
        "x": job.name,
        "u": job.user,
    }

    def filled(m: re.Match) -> str:
        if m.group(1) == "%":
            return "%"
        width, key = m.group(2), m.group(3)
        value = values[key]
        return value.zfill(min(int(width), 10)) if width and key in NUMERIC and value else value

    return _PATTERN.sub(filled, pattern)


def output_file(pattern: str | None, job: Named, workdir: str) -> str:
    """A program's output file: its pattern (None: sbatch's default) filled in for the job, relative to its working
    directory."""
    if pattern is None:
        pattern = DEFAULT_ARRAY_OUTPUT if job.array_job_id is not None else DEFAULT_OUTPUT
    return os.path.join(workdir, output_path(pattern, job))
