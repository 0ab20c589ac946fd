"""sbatch's default output file (slurm-%j.out) left in the folder by an earlier state's job.

Why: the controller writes over no file it did not write for the job (issue 23), so a new state's job 1 would fail
at its start on an old slurm-1.out, where sbatch would truncate the file. The CLI knows the folder: when the job
keeps the default name and the folder already holds slurm-*.out files, it submits the job held, then releases each
job whose file is free. A job whose file exists stays held (JobHeldUser) and one line says which file and what to
do, so nothing fails and nothing is written over. A folder without such files costs nothing more.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path

from vipu.v1 import job_pb2 as j


def held_for_check(request: j.SubmitJobRequest) -> Path | None:
    """The folder of the job's default output file if it holds slurm-*.out files already; the request then asks for
    the job held (its own `held`: the spec keeps no hold its user did not ask for). None (the request unchanged) if
    the job names its output, is held anyway, or the folder is clear."""
    spec = json.loads(request.spec)
    workload = spec.get("workload") or {}
    if spec.get("output") is not None or spec.get("hold") or workload.get("open_mode") == "append":
        return None  # an appending job adds to an old file of its user's: nothing is lost
    folder = Path(workload.get("chdir") or workload.get("submit_dir") or os.getcwd())
    if not glob.glob(os.path.join(glob.escape(str(folder)), "slurm-*.out")):
        return None
    request.held = True
    return folder


def release_clear(cli, request: j.SubmitJobRequest, reply: j.SubmitJobResponse, folder: Path) -> None:
    """Release the jobs whose default output file does not exist; say, for each other one, that it stays held."""
    from vipu.scheduler.arrays import parse_array

    array = json.loads(request.spec).get("array")
    ids = list(reply.job_ids)
    if array:  # tasks are numbered in the order of their indices, the array's id the first task's
        names = [(f"{ids[0]}_{t}", f"slurm-{ids[0]}_{t}.out") for t in parse_array(str(array)).indices]
    else:
        names = [(str(ids[0]), f"slurm-{ids[0]}.out")]
    clear = [job for job, (_, name) in zip(ids, names) if not (folder / name).exists()]
    if clear:
        cli.conn.call(cli.conn.jobs.ReleaseJobs, j.JobIdsRequest(ids=clear, single=True))
    for job, (shown, name) in zip(ids, names):
        if job not in clear:
            print(f"vipu: job {shown} is held: {folder / name} exists from an earlier job, and the controller"
                  f" writes over no output file it did not write for this job; remove or rename that file, then"
                  f" `vipu release {shown}` (or submit with -o/--output)", file=sys.stderr)
