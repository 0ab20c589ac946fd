"""A job's `output` file (sbatch --output), written when a run ends as slurmd writes a batch job's: how the run
ended, then what its workload logged.

Why a thread of its own: the caller holds the controller's lock, and a slow disk must not stall every RPC. A file
that cannot be written is logged; the job's record is not affected. Its directory is never made: a run whose
directory is missing fails at its start (executor.py), as sbatch's does.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path

from vipu.scheduler.effects import StopJob
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState
from vipu.scheduler.output_pattern import output_path

log = logging.getLogger("vipu.output")


class OutputFiles:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()  # (job id, path, text)
        self._writer: threading.Thread | None = None

    def write(self, stop: StopJob, job: Job, logged: list[str]) -> None:
        """Queue the output of the run `stop` ended (nothing if the job asked for none)."""
        if not job.spec.output:
            return
        again = stop.requeued and stop.state is not JobState.REQUEUED  # REQUEUED says it already
        ended = f"{stop.state.value}{', requeued' if again else ''}"
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.history[-1].at))
        lines = [f"vipu-sim job {job.display_id} ({job.name}, user {job.user}) on partition {stop.partition}:"
                 f" {ended} at {at}", *logged]
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="vipu-output", daemon=True)
            self._writer.start()
        self._queue.put((job.id, Path(output_path(job.spec.output, job)), "\n".join(lines) + "\n"))

    def _write(self) -> None:
        while True:
            job_id, path, text = self._queue.get()
            try:
                part = path.with_name(path.name + ".part")  # whole or not at all: a reader never sees half a file
                part.write_text(text)
                part.replace(path)
            except OSError as e:
                log.error("job %s: cannot write its output %s: %s", job_id, path, e)
