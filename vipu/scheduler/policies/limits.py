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
    QOS_ACCOUNT_JOBS,
    QOS_GRP_JOBS,
    QOS_USER_IPUS,
    QOS_USER_JOBS,
    QueuedJob,
    RunningJob,
    qos_sets,
)


Group = tuple  # ("array", id) | ("user jobs"/"user ipus", qos, user) | ("account jobs", qos, account) | ("jobs", qos)
# | ("ipus", qos)


Limit = tuple[Group, int | None, int, str]  # (group, its limit or None, a job's weight in it, the reason)


def limit_groups(job, qos: Mapping, limited, array_limit: int | None = None) -> list[Limit]:
    """Each limit `job` counts towards, in the order Slurm reports them: (group, its limit or None, the job's weight
    in it, the reason a job over it waits). `array_limit` is the %N of the job's array (a running job's is not
    needed: it only counts)."""
    out: list[Limit] = []
    if job.array_job_id is not None:
        out.append((("array", job.array_job_id), array_limit, 1, ARRAY_LIMIT))
    if job.qos in limited:
        q = qos[job.qos]
        out += [(("user jobs", job.qos, job.user), q.max_jobs_per_user, 1, QOS_USER_JOBS),
                (("user ipus", job.qos, job.user), q.max_ipus_per_user, job.ipus, QOS_USER_IPUS),
                (("account jobs", job.qos, job.account), q.max_jobs_per_account if job.account else None, 1,
                 QOS_ACCOUNT_JOBS),
                (("jobs", job.qos), q.max_jobs, 1, QOS_GRP_JOBS),
                (("ipus", job.qos), q.max_ipus, job.ipus, QOS_GRP_IPUS)]
    return out


class Usage:
    def __init__(self, running: Sequence[RunningJob], qos: Mapping):
        self.qos = qos
        self._running = running
        self._counts: Counter | None = None  # group -> jobs or IPUs in it now, counted on first need
        # starts and evictions made before counting was needed (two lists, not (job, sign) pairs: a cycle on a
        # large Pod starts thousands of jobs, and each pair was one more object for the cycle collector)
        self._added: list = []
        self._removed: list = []
        self._limited = qos_sets(qos).limited

    def _count(self, job, sign: int) -> None:
        for group, _, weight, _ in limit_groups(job, self.qos, self._limited):
            self._counts[group] += sign * weight  # type: ignore[index]

    def _ensure(self) -> None:
        if self._counts is None:
            self._counts = Counter()
            for job in self._running:
                self._count(job, 1)
            for job in self._added:
                self._count(job, 1)
            for job in self._removed:
                self._count(job, -1)
            self._added.clear()
            self._removed.clear()

    def add(self, job: QueuedJob) -> None:
        if self._counts is not None:
            self._count(job, 1)
        else:
            self._added.append(job)

    def remove(self, job: RunningJob) -> None:
        if self._counts is not None:
            self._count(job, -1)
        else:
            self._removed.append(job)

    def reason(self, job: QueuedJob) -> str | None:
        """The limit that keeps `job` from starting now, or None."""
        if job.array_limit is None and job.qos not in self._limited:
            return None
        self._ensure()
        for group, limit, weight, why in limit_groups(job, self.qos, self._limited, job.array_limit):
            if limit is not None and self._counts[group] + weight > limit:  # type: ignore[index]
                return why
        return None
