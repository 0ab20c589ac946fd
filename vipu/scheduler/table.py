"""The scheduler's memory: every job record plus the indexes a cycle needs, kept in step by one `put`.

Why one entry point: each change arrives as a new Job record (already committed to the Journal); `put` moves it
between the pending, running and lookup indexes by comparing it with the record it replaces, so no code path can
leave an index stale.
"""

from __future__ import annotations

import heapq
from collections import Counter

from vipu.scheduler.bits import block
from vipu.scheduler.job import Job
from vipu.scheduler.policies.base import QueuedJob, RunningJob
from vipu.scheduler.spec import parse_array
from vipu.scheduler.states import ACTIVE, JobState

S = JobState


class JobTable:
    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.pending: dict[int, QueuedJob] = {}  # every PENDING job
        self.gated: set[int] = set()  # pending jobs that are held or wait for a dependency
        self.deps_met: set[int] = set()  # pending jobs whose dependency was satisfied (Slurm then drops it)
        self.running: dict[int, RunningJob] = {}  # RUNNING and COMPLETING: they hold a partition
        self.used_mask = 0
        self.arrays: dict[int, list[int]] = {}  # array_job_id -> task job ids
        self.active_by_name: dict[tuple[str, str], set[int]] = {}  # (name, user) -> active ids, for singleton
        self.request_ids: dict[str, list[int]] = {}
        self.deadlines: list[tuple[float, int, float]] = []  # heap of (end_by, id, start_time) of RUNNING jobs
        self.pending_sizes: Counter = Counter()  # PENDING jobs by IPUs
        self.pending_qos: Counter = Counter()  # PENDING jobs by (QOS, IPUs)
        self.pending_limits: dict[int, Counter] = {}  # IPUs -> time limits of PENDING jobs -> how many
        self.next_id = 1

    def put(self, job: Job) -> None:
        old = self.jobs.get(job.id)
        if old is not None:
            self._leave(old, job.state in ACTIVE)
        else:
            if job.array_job_id is not None:
                self.arrays.setdefault(job.array_job_id, []).append(job.id)
            if job.request_id is not None:
                self.request_ids.setdefault(job.request_id, []).append(job.id)
            self.next_id = max(self.next_id, job.id + 1)
        self.jobs[job.id] = job
        self._enter(job, old is None or old.state not in ACTIVE)

    def _enter(self, job: Job, newly_active: bool) -> None:
        state = job.state
        if state is S.PENDING:
            spec = job.spec
            limit = parse_array(spec.array).limit if spec.array else None
            self.pending[job.id] = QueuedJob(
                job.id, spec.ipus, spec.time_limit, job.submit_time, job.user, spec.qos, spec.nice,  # type: ignore[arg-type]
                job.array_job_id, limit, spec.allocation,
            )
            self.pending_sizes[spec.ipus] += 1
            self.pending_qos[spec.qos, spec.ipus] += 1
            self.pending_limits.setdefault(spec.ipus, Counter())[spec.time_limit] += 1
            if job.held or (spec.dependency and job.id not in self.deps_met):
                self.gated.add(job.id)
        elif state is S.RUNNING or state is S.COMPLETING:
            self.running[job.id] = RunningJob(
                job.id, job.ipus, job.first_ipu, job.start_time, job.end_by, job.user, job.spec.qos,  # type: ignore[arg-type]
                job.array_job_id,
            )
            self.used_mask |= block(job.first_ipu, job.ipus)  # type: ignore[arg-type]
            if state is S.RUNNING:
                heapq.heappush(self.deadlines, (job.end_by, job.id, job.start_time))  # type: ignore[arg-type]
                if len(self.deadlines) > 2 * len(self.running) + 64:  # drop entries of runs that already ended
                    self.deadlines = [(r.end_by, r.id, r.start_time) for r in self.running.values()]
                    heapq.heapify(self.deadlines)
        if newly_active and state in ACTIVE:
            self.active_by_name.setdefault((job.name, job.user), set()).add(job.id)

    def _leave(self, job: Job, stays_active: bool) -> None:
        if self.pending.pop(job.id, None) is not None:
            self.pending_sizes[job.ipus] -= 1
            self.pending_qos[job.spec.qos, job.ipus] -= 1
            limits = self.pending_limits[job.ipus]
            limits[job.time_limit] -= 1
            if not limits[job.time_limit]:
                del limits[job.time_limit]
            self.gated.discard(job.id)
        if self.running.pop(job.id, None) is not None:
            self.used_mask &= ~block(job.first_ipu, job.ipus)  # type: ignore[arg-type]
        if not stays_active and job.state in ACTIVE:
            active = self.active_by_name.get((job.name, job.user))
            if active is not None:
                active.discard(job.id)
                if not active:
                    del self.active_by_name[(job.name, job.user)]

    def dependency_met(self, job_id: int) -> None:
        self.deps_met.add(job_id)
        if not self.jobs[job_id].held:
            self.gated.discard(job_id)

    def expired(self, now: float) -> list[Job]:
        """RUNNING jobs whose end-by time has come (stale heap entries of jobs that ended are skipped)."""
        out = []
        heap = self.deadlines
        while heap and heap[0][0] <= now:
            _, job_id, started = heapq.heappop(heap)
            job = self.jobs.get(job_id)
            if job is not None and job.state is S.RUNNING and job.start_time == started:
                out.append(job)
        return out

    def shortest_limits(self) -> dict[int, float]:
        """IPUs -> the shortest time limit among PENDING jobs of that size."""
        return {size: min(limits) for size, limits in self.pending_limits.items() if limits}
