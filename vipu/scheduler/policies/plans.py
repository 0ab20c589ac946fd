"""Limits over time: when may a job of a limited group (an array with %N, a QOS with job or IPU limits) run without
the group going over its limit, counting the running jobs until their end-by times and the reservations made so
far in the walk.

Why: limits.Usage answers "may it start now?"; a reservation or an estimated start needs "from when?". Without
this, the tasks of an array 0-7%2 waiting for the same block were all promised the same moment, and a short task
behind them could start now and be running when the first two were due, pushing them back. A group is only
looked at when one of its jobs waits, so a cycle over jobs without limits does no more work.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from vipu.scheduler.policies.base import QueuedJob, RunningJob
from vipu.scheduler.policies.limits import limit_groups

Span = tuple[float, float, int, int]  # (start, end, weight, job id)


class LimitPlan:
    __slots__ = ("now", "qos", "limited", "_running", "_spans", "_extra", "_gone", "reserved")

    def __init__(self, now: float, running: Sequence[RunningJob], qos: Mapping, limited: frozenset[str]):
        self.now = now
        self.qos = qos
        self.limited = limited
        self._running = running
        self._spans: dict[tuple, list[Span]] | None = None  # group -> spans, built on first use
        self._extra: list[tuple[QueuedJob, float]] = []  # starts made before the spans were built
        self._gone: set[int] = set()  # evicted running jobs
        self.reserved: set[tuple] = set()  # groups that hold a reservation of this walk

    def applies(self, job: QueuedJob) -> bool:
        return job.array_limit is not None or job.qos in self.limited

    def groups(self, job, array_limit: int | None = None) -> list[tuple[tuple, int | None, int]]:
        """(group, limit, this job's weight in it) for each limit `job` counts towards."""
        limits = limit_groups(job, self.qos, self.limited, array_limit)
        return [(group, limit, weight) for group, limit, weight, _ in limits]

    def _add(self, job, start: float, end: float) -> None:
        for key, _, weight in self.groups(job):
            self._spans.setdefault(key, []).append((start, end, weight, job.id))  # type: ignore[union-attr]

    def _ensure(self) -> dict[tuple, list[Span]]:
        if self._spans is None:
            self._spans = {}
            for r in self._running:
                if r.id not in self._gone and (r.array_job_id is not None or r.qos in self.limited):
                    self._add(r, self.now, r.end_by)
            for job, end in self._extra:
                self._add(job, self.now, end)
        return self._spans

    # -- what the walk tells it ---------------------------------------------------------------------------
    def started(self, job: QueuedJob, end: float) -> None:
        if self.applies(job):
            if self._spans is None:
                self._extra.append((job, end))
            else:
                self._add(job, self.now, end)

    def evicted(self, job: RunningJob) -> None:
        self._gone.add(job.id)
        if self._spans is not None:
            for spans in self._spans.values():
                spans[:] = [s for s in spans if s[3] != job.id]

    def reserve(self, job: QueuedJob, start: float, end: float) -> None:
        self._ensure()
        self._add(job, start, end)
        self.reserved.update(key for key, _, _ in self.groups(job))

    # -- what the walk asks -------------------------------------------------------------------------------
    def touches_reservation(self, job: QueuedJob) -> bool:
        return bool(self.reserved) and any(key in self.reserved for key, _, _ in self.groups(job))

    def clash(self, job: QueuedJob, start: float, end: float) -> float | None:
        """None if `job` may run over [start, end) within every limit of its groups; otherwise the next moment at
        which it might (a span of a group over its limit ends then; inf: never)."""
        spans_of = self._ensure()
        retry = None
        for key, limit, weight in self.groups(job, job.array_limit):
            spans = spans_of.get(key)
            if limit is None or not spans:
                continue
            if _peak(spans, start, end) + weight > limit:
                later = min((e for _, e, _, _ in spans if e > start), default=math.inf)
                retry = later if retry is None else min(retry, later)
        return retry


def _peak(spans: list[Span], start: float, end: float) -> int:
    """The most weight the spans hold at any moment of [start, end) (spans are [s, e))."""
    load = 0
    events = []
    for s, e, w, _ in spans:
        if s < end and e > start:
            if s <= start:
                load += w
            else:
                events.append((s, w))
            if e < end:
                events.append((e, -w))
    peak = load
    for _, w in sorted(events):  # at equal times an end (-w) sorts before a start
        load += w
        peak = max(peak, load)
    return peak
