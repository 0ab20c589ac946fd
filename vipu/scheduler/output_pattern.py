"""Where a job's output goes: Slurm's filename patterns in `output`, filled in for one job."""

from __future__ import annotations

import re

from vipu.scheduler.job_record import Job

_PATTERN = re.compile(r"%(%|[jAaxu])")


def output_path(pattern: str, job: Job) -> str:
    """%j job id, %A array job id (the job id outside an array), %a array task (empty outside one), %x job name,
    %u user, %% a percent sign; any other %-sequence is kept as written, as sbatch does."""
    values = {
        "%": "%",
        "j": str(job.id),
        "A": str(job.array_job_id if job.array_job_id is not None else job.id),
        "a": str(job.array_task_id) if job.array_task_id is not None else "",
        "x": job.name,
        "u": job.user,
    }
    return _PATTERN.sub(lambda m: values[m.group(1)], pattern)
