"""sbatch's default output file (slurm-%j.out) left in the folder by an earlier state's job.

Why: the controller writes over no file it did not write for the job (issue 23), so a new state's job 1 would fail
at its start on an old slurm-1.out, where sbatch would truncate the file. The CLI knows the folder: when the job
keeps the default name and the folder already holds slurm-*.out files, it submits the job held, then releases each
job whose file is free. A job whose file exists is released too when the controller would write over that file (it
made it for an earlier job of the same user: output_folder.py's writer mark, which only the controller can judge,
so its release check decides). Only a job whose file is another writer's stays held (JobHeldUser), and one line
says which file and what to do, so nothing fails and nothing is written over. A folder without such files costs
nothing more.
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
    folder = _folder_with_earlier_output(json.loads(request.spec))
    if folder is not None:
        request.held = True
    return folder


def held_note(request: j.SubmitJobRequest, job_id: int) -> str | None:
    """What --test-only adds when the submit it tests would queue the job held for its default output file (a
    file of another writer's keeps it held; one the controller wrote for the user's earlier job does not)."""
    spec = json.loads(request.spec)
    folder = _folder_with_earlier_output(spec)
    if folder is None or spec.get("array"):  # (an array: each task's file is looked at when it is queued)
        return None
    name = folder / f"slurm-{job_id}.out"
    if not name.exists():
        return None
    return (f"vipu: if queued now, job {job_id} would be held unless the controller wrote {name} for your earlier"
            " job: remove or rename that file, or give -o/--output")


def _folder_with_earlier_output(spec: dict) -> Path | None:
    """The folder of the job's default output file if it holds slurm-*.out files already (held_for_check)."""
    workload = spec.get("workload") or {}
    if spec.get("output") is not None or spec.get("hold") or workload.get("open_mode") == "append":
        return None  # an appending job adds to an old file of its user's: nothing is lost
    folder = Path(workload.get("chdir") or workload.get("submit_dir") or os.getcwd())
    if not glob.glob(os.path.join(glob.escape(str(folder)), "slurm-*.out")):
        return None
    return folder


def release_clear(cli, request: j.SubmitJobRequest, reply: j.SubmitJobResponse, folder: Path) -> None:
    """Release the jobs whose default output file does not exist, and those whose file the controller would write
    over (its release refuses the others: vipu/control/job_ops.py _check_output); say, for each job still held,
    why."""
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
    taken = [job for job in ids if job not in clear]
    # a refusal releases none of the ids asked: all at once first (most often all are the user's own), then each
    kept = set() if not taken or _released(cli, taken) else \
        {job for job in taken if len(taken) == 1 or not _released(cli, [job])}
    for job, (shown, name) in zip(ids, names):
        if job in kept:
            print(f"vipu: job {shown} is held: {folder / name} exists, and the controller writes over no output"
                  f" file it did not write for this job or your earlier ones; remove or rename that file, then"
                  f" `vipu release {shown}` (or submit with -o/--output)", file=sys.stderr)


def _released(cli, ids: list[int]) -> bool:
    """Whether the controller released these jobs (it refuses, releasing none, if one's run would fail at once on
    its output file)."""
    return cli.conn.attempt(cli.conn.jobs.ReleaseJobs, j.JobIdsRequest(ids=ids, single=True)) is not None
