"""The live scheduling loop: the Scheduler's decisions on the wall clock, carried out on the partition controller.

Why a loop thread woken by events: a submit, cancel or release wakes it at once, so an idle Pod starts a job within
one cycle of its submission (no fixed tick like Slurm's; a held submit does not wake it, as it cannot start yet);
otherwise it sleeps until the next workload end or time limit, or at most IDLE_WAIT_S. Every step runs under the
runtime lock, so the scheduler, the partitions and the store change together.

A StartJob becomes partition `slurm_<id>` on the block the scheduler chose, held by the job; a StopJob removes it.
Workloads: `sleep` ends by itself after its duration (a timer here); `hold` keeps the partition until the job is
cancelled or reaches its time limit. Issue 5's training workloads will run on the machine actors instead.
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from pathlib import Path

from vipu.errors import NotFound, VipuError
from vipu.jobs.spec import TrainWorkload
from vipu.partition.partition import PartitionRequest
from vipu.partition.rules import job_holder
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.output import output_path
from vipu.scheduler.spec import SleepWorkload
from vipu.scheduler.states import JobState

log = logging.getLogger("vipu.dispatcher")
IDLE_WAIT_S = 1.0
# During a burst of submissions, cycles run at most this often: one cycle then sees many new jobs, instead of one
# cycle per job each walking the whole queue. An idle Pod still starts a job at once (the gap has long passed).
MIN_GAP_S = 0.01


class Dispatcher:
    def __init__(self, runtime, now):
        self.rt = runtime
        self.now = now
        self._ends: list[tuple[float, int, float, int]] = []  # (end time, job id, its start time, exit code)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._outputs: queue.SimpleQueue = queue.SimpleQueue()  # (job id, path, text) for the writer thread
        self._writer: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="vipu-dispatcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=5)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        last = 0.0
        while not self._stop.is_set():
            gap = last + MIN_GAP_S - time.monotonic()
            if gap > 0:
                self._stop.wait(gap)
            last = time.monotonic()
            try:
                with self.rt.lock:
                    with self.rt.metrics.cycle.time():
                        wait = self.step(self.now())
            except Exception:  # noqa: BLE001 - the loop must outlive any one bad step; the log has it
                log.exception("scheduling step failed")
                wait = IDLE_WAIT_S
            self._wake.wait(timeout=wait)
            self._wake.clear()

    # -- one step (caller holds the lock) ---------------------------------------------------------------------
    def step(self, now: float) -> float:
        """Finish due workloads, enforce time limits, run one cycle; returns seconds until the next due event."""
        scheduler = self.rt.scheduler
        effects = []
        # each at the time it was due, which after a restart can be well before now: a workload that ended (unless
        # its time limit ran out strictly before, as the replay decides) and then the time limits that ran out
        while self._ends and self._ends[0][0] <= now:
            end, job_id, started, exit_code = heapq.heappop(self._ends)
            job = scheduler.table.running_since(job_id, started)
            if job is not None and not job.end_by < end:
                effects += scheduler.job_finished(job_id, end, exit_code=exit_code)
        effects += scheduler.enforce_time_limits(now)
        self.apply(effects, now)
        self.apply(scheduler.cycle(now, *self.rt.controller.state.job_masks()), now)
        return self._next_wait(now)

    def _next_wait(self, now: float) -> float:
        due = [IDLE_WAIT_S]
        if self._ends:
            due.append(self._ends[0][0] - now)
        deadlines = self.rt.scheduler.table.deadlines  # a heap of (end_by, ...): its head is the next time limit
        if deadlines:
            due.append(deadlines[0][0] - now)
        begin = self.rt.scheduler.table.next_begin()  # the next job to become eligible (sbatch --begin)
        if begin is not None:
            due.append(begin - now)
        return max(0.0, min(due))

    def apply(self, effects, now: float) -> None:
        partitions = self.rt.controller.partitions
        for effect in effects:
            if isinstance(effect, StopJob):
                # a run stopped by `vipu requeue` went back to PENDING: sacct calls such a run REQUEUED
                ended = "REQUEUED" if effect.state is JobState.PENDING else effect.state.value
                self.rt.metrics.completions.labels(ended).inc()
                try:
                    partitions.remove(effect.partition, force=True)
                except NotFound:
                    pass
                self._write_output(effect)
            elif isinstance(effect, StartJob):
                self._start(effect, now)

    def _write_output(self, stop: StopJob) -> None:
        """The job's `output` file, written when a run ends as slurmd writes a batch job's: how the run ended (at
        the time recorded for it), then a train workload's log. Written by a thread of its own, as the caller holds
        the runtime lock and a slow disk must not stall every RPC; a file that cannot be written is logged."""
        job = self.rt.scheduler.table.jobs.get(stop.job_id)
        if job is None or not job.spec.output:
            return
        ended = f"{stop.state.value}{', requeued' if stop.requeued else ''}"
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.history[-1].at))
        lines = [f"vipu-sim job {job.display_id} ({job.name}, user {job.user}) on partition {stop.partition}:"
                 f" {ended} at {at}", *self.rt.training.log_lines(job.id)]
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_outputs, name="vipu-output", daemon=True)
            self._writer.start()
        self._outputs.put((job.id, Path(output_path(job.spec.output, job)), "\n".join(lines) + "\n"))

    def _write_outputs(self) -> None:
        while True:
            job_id, path, text = self._outputs.get()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                part = path.with_name(path.name + ".part")  # whole or not at all: a reader never sees half a file
                part.write_text(text)
                part.replace(path)
            except OSError as e:
                log.error("job %s: cannot write its output %s: %s", job_id, path, e)

    def _start(self, start: StartJob, now: float) -> None:
        request = PartitionRequest(
            name=start.partition,
            size=start.ipus,
            allocation=start.allocation,
            holder=job_holder(start.job_id),
            owner=self.rt.scheduler.table.jobs[start.job_id].user,
            first_ipu=start.first_ipu,
            reconfigurable=True,  # as the V-IPU Slurm plugin creates them
        )
        try:
            self.rt.controller.partitions.create(request)
        except VipuError as e:  # like a failed Slurm prolog: the job goes back to the queue
            log.error("job %s: partition %s could not be created: %s", start.job_id, start.partition, e.message)
            self.apply(self.rt.scheduler.job_finished(start.job_id, now, JobState.NODE_FAIL, exit_code=1), now)
            return
        self.rt.fleet.bring_up(self.rt.controller.state.topology.machines_of(start.first_ipu, start.ipus))
        job = self.rt.scheduler.table.jobs[start.job_id]
        self.rt.metrics.starts.inc()
        self.rt.metrics.queue_wait.observe(max(0.0, start.start_time - job.waiting_since))  # as a replay's wait
        if isinstance(start.workload, TrainWorkload):
            self.rt.training.start(start.job_id, start.start_time, start.first_ipu, start.workload)
        else:
            self.watch(start.job_id, start.start_time, start.workload)

    def watch(self, job_id: int, started: float, workload) -> None:
        """Arrange for a sleep workload to end by itself (also used to resume running jobs after a restart)."""
        if isinstance(workload, SleepWorkload):
            heapq.heappush(self._ends, (started + workload.duration, job_id, started, workload.exit_code))
