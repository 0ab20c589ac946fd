"""A job's `output` file (sbatch --output), written when a run ends as slurmd writes a batch job's: how the run
ended, then what its workload logged. For every kind but command, whose program writes its own.

Why the controller is careful where it writes: it writes as its own OS user, for any caller. So a file goes only
under the folders allowed (the job's submit directory, the state folder's job-output folder, or the operator's
--output-dir folders instead of the first), never through a symlink, never into a directory it would have to make
(as sbatch, the run fails instead), and never over an existing file unless the controller wrote that file for the
same job (its own first line names the job, and the controller's user owns it) or for an earlier job of the same
user (output_folder.py's WRITER attribute). The check is made when the run starts, so the job fails then; the write
checks again, since the folder may have changed in between.

Why a thread of its own: the caller holds the controller's lock, and a slow disk must not stall every RPC. A file
that cannot be written is logged; the job's record is not affected.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

from vipu.errors import InvalidArgument
from vipu.jobs.output_folder import (JOB_OUTPUT, allowed_folders, mark_writer, marked_for, missing_folder,
                                     missing_workdir, not_ours, outside_folders, writer_mark)
from vipu.scheduler.effects import StopJob
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.output_pattern import output_path

log = logging.getLogger("vipu.output")


def header(job: Job) -> str:
    """The first line's start: the same for every run of one job, and for no other job."""
    return f"vipu-sim job {job.display_id} ({job.name}, user {job.user})"


def _headed(job: Job, path: Path) -> bool:
    """Written by this controller for this job: its first line says so (under any name: a running job's may
    change)."""
    with open(path, errors="replace") as f:
        line = f.readline()
    return line.startswith(f"vipu-sim job {job.display_id} (") and f", user {job.user}) on partition " in line


def refuse_linked_output(state_dir: Path) -> None:
    """InvalidArgument if the state folder's job-output folder is a symlink. Why: the controller writes users' output
    there as its own user, and a link would take it wherever the link points (allowed_folders skips such a link when
    it writes)."""
    path = state_dir / JOB_OUTPUT
    if os.path.islink(path):
        raise InvalidArgument(
            f"{path} is a symlink; the controller writes job output into that folder as its own user, never through a"
            f" link: make it a folder (rm {path} && mkdir {path}), or give the folder it points to as --output-dir")


class OutputFiles:
    def __init__(self, state_dir: Path | None = None, output_dirs: tuple[Path, ...] = ()) -> None:
        self.state_dir = state_dir
        self.output_dirs = tuple(Path(os.path.realpath(d)) for d in output_dirs)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()  # (job, path, text)
        self._writer: threading.Thread | None = None

    def allowed(self, spec: JobSpec) -> list[Path]:
        """The folders the output of a job of `spec` may be written under."""
        return allowed_folders(spec.submit_dir, self.state_dir, self.output_dirs)

    def refusal(self, job: Job) -> str | None:
        """Why the job's output file cannot be written, or None."""
        path = output_path(job.spec.output, job)  # type: ignore[arg-type]
        return (missing_folder("output", path) or outside_folders("output", path, self.allowed(job.spec))
                or not_ours("output", Path(path), job.display_id,
                            lambda p: _headed(job, p) or marked_for(p, writer_mark(self.state_dir, job.user))))

    def check_submit(self, spec: JobSpec, program: bool) -> None:
        """InvalidArgument, naming the field, where a run of the job could only fail at its start on its files (as
        the controller's user opens them: not under --secure, where a program opens its own as its user's account):
        a program's working directory missing, or an output or error file's folder missing or outside those
        allowed. Only a folder the submit knows: one with a %-pattern waits for the start (%j is the id the queue
        gives). What may change until then (a folder made or removed, a file left in it) the start checks again."""
        if program:
            work = cast(Any, spec.workload)  # a command workload (CommandWorkload), which the scheduler does not import
            missing = missing_workdir(work.workdir, flag=False)
            if missing:
                raise InvalidArgument(missing, field="spec.workload.chdir")
            base, files = work.workdir, {"output": spec.output, "error": spec.error}
            dirs = allowed_folders(spec.submit_dir or work.submit_dir, self.state_dir, self.output_dirs) + [Path(base)]
        else:
            base, files, dirs = "", {"output": spec.output}, self.allowed(spec)
        for what, pattern in files.items():
            if not pattern or (program and pattern == os.devnull) or "%" in os.path.dirname(pattern):
                continue  # none, a program's -o /dev/null (as sbatch's), or a folder only the start knows
            path = os.path.join(base, pattern)
            why = missing_folder(what, path, flag=False) or outside_folders(what, path, dirs, flag=False)
            if not why and "%" not in pattern and os.path.isdir(path):  # no run could open it as a file
                why = f"{what} file {path} is a directory; give a file in it (e.g. {os.path.join(path, '%j.out')})"
            if why:
                raise InvalidArgument(why, field=f"spec.{what}")

    def write(self, stop: StopJob, job: Job, logged: list[str]) -> None:
        """Queue the output of the run `stop` ended (nothing if the job asked for none)."""
        if not job.spec.output:
            return
        again = stop.requeued and stop.state is not JobState.REQUEUED  # REQUEUED says it already
        ended = f"{stop.state.value}{', requeued' if again else ''}"
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.history[-1].at))
        lines = [f"{header(job)} on partition {stop.partition}: {ended} at {at}", *logged]
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="vipu-output", daemon=True)
            self._writer.start()
        self._queue.put((job, Path(output_path(job.spec.output, job)), "\n".join(lines) + "\n"))

    def _write(self) -> None:
        while True:
            job, path, text = self._queue.get()
            try:
                refused = self.refusal(job)
                if refused:
                    log.error("job %s: %s", job.id, refused)
                    continue
                # whole or not at all: a reader never sees half a file; a new name no one else can have made
                part = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.part")
                fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                mark_writer(fd, writer_mark(self.state_dir, job.user))
                with os.fdopen(fd, "w") as f:
                    f.write(text)
                try:
                    if path.exists():  # ours: refusal() said so
                        os.replace(part, path)
                    else:
                        os.link(part, path)  # fails if someone made the file meanwhile: nothing is written over
                finally:
                    part.unlink(missing_ok=True)
            except OSError as e:
                log.error("job %s: cannot write its output %s: %s", job.id, path, e)
