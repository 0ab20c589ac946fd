"""Slurm's multifactor priority: weighted factors in [0, 1] for age, fair-share, job size and QOS, minus nice.

Why fair-share decays with a half-life (PriorityDecayHalfLife, 7 days by default): yesterday's heavy user should
not be punished forever, and usage recorded as one running number per user costs O(users), not O(jobs). Shares
are equal between users. The queue order that uses these factors is kept in order.py.
"""

from __future__ import annotations

from typing import Iterable

from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job_record import PriorityBreakdown
from vipu.scheduler.policies.base import QueuedJob, RunningJob

LOWEST = 1.0  # the lowest multifactor priority: 0 is a held job's, as in Slurm


class FairShare:
    """Each user's IPU-seconds, halving every `half_life` seconds."""

    def __init__(self, half_life: float):
        self.half_life = half_life
        self._usage: dict[str, tuple[float, float]] = {}  # user -> (usage, as of)

    def read_copy(self) -> FairShare:
        copy = FairShare(self.half_life)
        copy._usage = dict(self._usage)
        return copy

    def _decayed(self, user: str, now: float) -> float:
        usage, at = self._usage.get(user, (0.0, now))
        return usage * 0.5 ** ((now - at) / self.half_life) if now > at else usage

    def usage(self) -> dict[str, tuple[float, float]]:
        """user -> (IPU-seconds, as of): what charge() takes back, decay included."""
        return dict(self._usage)

    def charge(self, user: str, ipu_seconds: float, at: float) -> None:
        """Record finished (or preempted) work; `at` is when it ended."""
        if ipu_seconds > 0:
            self._usage[user] = (self._decayed(user, at) + ipu_seconds, max(at, self._usage.get(user, (0, at))[1]))

    def factors(self, now: float, running: Iterable[RunningJob] = ()) -> dict[str, float]:
        """Slurm's classic 2^(-usage/share): 1 for a user with no usage, 0.5 for one using exactly their share.

        Running jobs count with the IPU-seconds used so far, so long jobs lower their user's priority while they
        run, not only when they end. Users absent from the result have factor 1."""
        usage = {user: self._decayed(user, now) for user in self._usage}
        get = usage.get
        for r in running:  # thousands run on a large Pod: the loop of max(0.0, now - start), inlined
            elapsed = now - r.start_time
            user = r.user
            usage[user] = get(user, 0.0) + r.ipus * (elapsed if elapsed > 0.0 else 0.0)
        total = sum(usage.values())
        if total <= 0:
            return {}
        share = 1.0 / len(usage)
        return {user: 2.0 ** (-(u / total) / share) for user, u in usage.items()}


def qos_factors(config: SchedulerConfig) -> dict[str, float]:
    top = config.max_qos_priority or 1
    return {name: q.priority / top for name, q in config.qos.items()}


def breakdown(job: QueuedJob, now: float, config: SchedulerConfig, total_ipus: int,
              fairshare: dict[str, float], qos: dict[str, float] | None = None) -> PriorityBreakdown:
    """sprio's row for one job (a fixed priority, an admin's, is its total; the factors are shown as computed);
    `fairshare` is FairShare.factors(now, running), `qos` is qos_factors(config) (give
    it when making many rows: a listing of 10,000 jobs spent a tenth of its time working it out again)."""
    return PriorityRows(now, config, total_ipus, fairshare, qos).row(job)


class PriorityRows:
    """breakdown() for many jobs at one moment, what does not depend on the job looked up once: a cycle on a large
    Pod records the priority of two thousand starts. Each weighted term, with its value rounded to 3 places, is
    kept by what it depends on (submit time, user, size, QOS): those take few values among the jobs of one moment
    (jobs submitted together share a submit time), and round() to digits formats the number, a microsecond each."""

    def __init__(self, now: float, config: SchedulerConfig, total_ipus: int, fairshare: dict[str, float],
                 qos: dict[str, float] | None = None):
        w = config.weights
        self.now, self.max_age, self.total_ipus, self.fairshare = now, config.max_age, total_ipus, fairshare
        self.w_age, self.w_fairshare, self.w_size, self.w_qos = w.age, w.fairshare, w.job_size, w.qos
        self.qos = qos if qos is not None else qos_factors(config)
        self._ages: dict[float, tuple[float, float]] = {}  # submit time -> (age term, rounded)
        self._fairshares: dict[str, tuple[float, float]] = {}  # user -> (fair-share term, rounded)
        self._sizes: dict[int, tuple[float, float]] = {}  # IPUs -> (job size term, rounded)
        self._qos_terms: dict[str, tuple[float, float]] = {}  # QOS -> (QOS term, rounded)

    def row(self, job: QueuedJob) -> PriorityBreakdown:
        age = self._ages.get(job.submit_time)
        if age is None:
            age = self._ages[job.submit_time] = _term(
                self.w_age * min(1.0, max(0.0, self.now - job.submit_time) / self.max_age))
        fs = self._fairshares.get(job.user)
        if fs is None:
            fs = self._fairshares[job.user] = _term(self.w_fairshare * self.fairshare.get(job.user, 1.0))
        size = self._sizes.get(job.ipus)
        if size is None:
            size = self._sizes[job.ipus] = _term(self.w_size * job.ipus / self.total_ipus)
        qos = self._qos_terms.get(job.qos)
        if qos is None:
            qos = self._qos_terms[job.qos] = _term(self.w_qos * self.qos[job.qos])
        fixed = job.fixed_priority
        # under 1 (a large nice) it is 1, as Slurm's multifactor total (priority_multifactor.c
        # _get_priority_internal, and sprio's get_priority_from_factors: "Priority 0 is reserved for held jobs");
        # the queue orders by it so (order.py FLOOR)
        total = max(LOWEST, age[0] + fs[0] + size[0] + qos[0] - job.nice) if fixed is None else float(fixed)
        return PriorityBreakdown.trusted({
            "job_id": job.id, "user": job.user, "total": round(total, 3), "age": age[1], "fairshare": fs[1],
            "job_size": size[1], "qos": qos[1], "nice": job.nice,
        })


def _term(value: float) -> tuple[float, float]:
    return value, round(value, 3)
