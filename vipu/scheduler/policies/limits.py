"""QOS and array limits, counted once per cycle and updated as the cycle starts and evicts jobs.

Why the policies check limits before resources: a job over its user's limit must neither start nor take a
reservation, or it would hold back jobs that may run; Slurm shows the limit as its reason instead. Counting is lazy:
a cycle in which no pending job is in a limited QOS or an array with %N never walks the running jobs.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from vipu.scheduler.policies.base import (
    ARRAY_LIMIT,
    QOS_GRP_IPUS,
    QOS_GRP_JOBS,
    QOS_USER_IPUS,
    QOS_USER_JOBS,
    QueuedJob,
    RunningJob,
    qos_sets,
)


class Usage:
    def __init__(self, running: Sequence[RunningJob], qos: Mapping):
        self.qos = qos
        self._running = running
        self._counted = False
        self._deltas: list[tuple[object, int]] = []  # starts and evictions made before counting was needed
        self._limited = qos_sets(qos).limited

    def _count(self, job, sign: int) -> None:
        if job.qos in self._limited:
            self.user_jobs[job.qos, job.user] += sign
            self.user_ipus[job.qos, job.user] += sign * job.ipus
            self.qos_jobs[job.qos] += sign
            self.qos_ipus[job.qos] += sign * job.ipus
        if job.array_job_id is not None:
            self.array_jobs[job.array_job_id] += sign

    def _ensure(self) -> None:
        if not self._counted:
            self._counted = True
            self.user_jobs: Counter = Counter()
            self.user_ipus: Counter = Counter()
            self.qos_jobs: Counter = Counter()
            self.qos_ipus: Counter = Counter()
            self.array_jobs: Counter = Counter()
            for job in self._running:
                self._count(job, 1)
            for job, sign in self._deltas:
                self._count(job, sign)
            self._deltas.clear()

    def add(self, job: QueuedJob) -> None:
        if self._counted:
            self._count(job, 1)
        else:
            self._deltas.append((job, 1))

    def remove(self, job: RunningJob) -> None:
        if self._counted:
            self._count(job, -1)
        else:
            self._deltas.append((job, -1))

    def reason(self, job: QueuedJob) -> str | None:
        """The limit that keeps `job` from starting now, or None."""
        limited = job.qos in self._limited
        if job.array_limit is None and not limited:
            return None
        self._ensure()
        if job.array_limit is not None and self.array_jobs[job.array_job_id] >= job.array_limit:
            return ARRAY_LIMIT
        if not limited:
            return None
        q = self.qos[job.qos]
        key = (job.qos, job.user)
        if q.max_jobs_per_user is not None and self.user_jobs[key] + 1 > q.max_jobs_per_user:
            return QOS_USER_JOBS
        if q.max_ipus_per_user is not None and self.user_ipus[key] + job.ipus > q.max_ipus_per_user:
            return QOS_USER_IPUS
        if q.max_jobs is not None and self.qos_jobs[job.qos] + 1 > q.max_jobs:
            return QOS_GRP_JOBS
        if q.max_ipus is not None and self.qos_ipus[job.qos] + job.ipus > q.max_ipus:
            return QOS_GRP_IPUS
        return None
