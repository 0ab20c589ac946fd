"""Per-job figures of a replay and the measures scheduling papers report from them: bounded slowdown, slowdown,
per-user fairness (Jain's index), and queue length and utilisation over time.

Why the per-job columns carry the names of `vipu history --json` (the Job message): a live run's history and its
replay's jobs then line up column by column and can be diffed; the columns the message does not have (eligible_time,
wait_s, run_time_s, preemptions, slowdowns) are worked out from what it does have, as `from_history` shows.

Definitions (docs/traces.md): eligible = the later of submit and begin; wait = last start - the later of last
queueing (submit or requeue) and begin (Job.waiting_since, as the live queue-wait histogram measures it); run = end -
last start; response = end - eligible; slowdown = response / run; bounded slowdown = max(1, response / max(run,
threshold)), threshold 10 s unless --bsld-threshold; fairness = Jain's index (sum x)^2 / (n sum x^2) over users' mean
bounded slowdowns (1: every user slowed down alike; 1/n: one user bears it all).

A run of 0 s (SWF's run time 0: under half a second) has no slowdown (response / 0), and a bounded slowdown all the
same: the threshold (more than 0) is what bounds it, max(1, response / threshold), which is why Feitelson et al.
("Theory and Practice in Parallel Job Scheduling", JSSPP 1997) bound it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState

BSLD_THRESHOLD = 10.0
# the columns of --jobs-out, in order; all but policy, seed, trace_line, trace_wait_s and the derived ones are the
# Job message's names
JOB_COLUMNS = ("policy", "seed", "id", "trace_line", "trace_wait_s", "name", "user", "qos", "ipus", "submit_time",
               "begin_time", "eligible_time", "start_time", "end_time", "wait_s", "total_wait_s", "run_time_s",
               "time_limit_s", "state", "first_ipu", "requeue_count", "preemptions", "slowdown", "bounded_slowdown")
SERIES_COLUMNS = ("policy", "seed", "time", "used_ipus", "utilisation", "running_jobs", "queued_jobs")


@dataclass(frozen=True)
class JobFigures:
    """One job as a replay (or a live controller's history) left it."""

    id: int
    name: str
    user: str
    qos: str
    ipus: int
    submit_time: float
    begin_time: float | None
    eligible_time: float
    start_time: float | None
    end_time: float | None
    wait_s: float | None
    total_wait_s: float | None  # every run's wait added up (wait_s is the last's): what the queue length integrates
    run_time_s: float | None
    time_limit_s: float
    state: str
    first_ipu: int | None
    requeue_count: int
    preemptions: int
    slowdown: float | None
    bounded_slowdown: float | None

    def row(self, policy: str, seed: int | None, trace_line: int | None = None,
            trace_wait: float | None = None) -> dict:
        """The job's --jobs-out row; `trace_line` is the line of the trace it came from and `trace_wait` the wait the
        trace recorded for it (neither known to a history)."""
        return {"policy": policy, "seed": seed, "id": self.id, "trace_line": trace_line, "trace_wait_s": trace_wait,
                **{c: getattr(self, c) for c in JOB_COLUMNS[5:]}}


def figures(job: Job, threshold: float = BSLD_THRESHOLD) -> JobFigures:
    """A scheduler's job record as one row."""
    preempted = sum(1 for t in job.history if t.state is JobState.PREEMPTED)
    waited = job.start_time - job.waiting_since if job.start_time is not None else None
    return _figures(job.id, job.name, job.user, job.spec.qos or "", job.ipus, job.submit_time, job.begin_time,
                    job.start_time, job.end_time, waited, job.time_limit, job.state.value, job.first_ipu,
                    job.requeue_count, preempted, threshold, [(t.state.value, t.at) for t in job.history])


def all_waits(history: Iterable[tuple[str, float]], begin: float | None) -> float:
    """Every wait of a job's runs added up, each from an entry into PENDING (its submission, a requeue), or its begin
    time if later, to the start that ended it. Why beside wait_s (the last run's, as sacct counts per run): a
    preempted job's first wait is in no other figure, and summed over the jobs these are the queue length's
    integral, avg queue x makespan."""
    total, since = 0.0, None
    for state, at in history:
        if state == "PENDING":
            since = at if begin is None else max(at, begin)
        elif state == "RUNNING" and since is not None:
            total, since = total + max(0.0, at - since), None
    return total


def _figures(id, name, user, qos, ipus, submit, begin, start, end, waited, limit, state, first_ipu, requeues,
             preemptions, threshold, history) -> JobFigures:
    eligible = submit if begin is None else max(submit, begin)
    run = end - start if start is not None and end is not None else None
    slowdown = bounded = None
    if run is not None:
        response = end - eligible
        slowdown = response / run if run > 0 else None
        bounded = max(1.0, response / max(run, threshold))
    total = all_waits(history, begin) if start is not None else None
    return JobFigures(id, name, user, qos, ipus, submit, begin, eligible, start, end, waited, total, run, limit, state,
                      first_ipu, requeues, preemptions, slowdown, bounded)


def from_history(record: dict, threshold: float = BSLD_THRESHOLD) -> JobFigures:
    """A row of `vipu history --json` (a live controller's ended job) as the same figures a replay gives."""
    # its detail as --json gives it (times as seconds), or in a row saved by an older CLI as the JSON text
    detail = json.loads(record["detail_json"]) if record.get("detail_json") else record.get("detail") or {}
    history = detail.get("history", [])
    queued = max((t["at"] for t in history if t["state"] == "PENDING"), default=record["submit_time"])
    begin = record.get("begin_time")
    since = queued if begin is None else max(queued, begin)
    start = record.get("start_time")
    return _figures(record["id"], record["name"], record["user"], record["qos"], record["ipus"],
                    record["submit_time"], begin, start, record.get("end_time"),
                    start - since if start is not None else None, record["time_limit_s"], record["state"],
                    detail.get("first_ipu"), record["requeue_count"],
                    sum(1 for t in history if t["state"] == "PREEMPTED"), threshold,
                    [(t["state"], t["at"]) for t in history])


@dataclass(frozen=True)
class Series:
    """What a replay looked like after each of its steps: a step function of time."""

    times: list[float]
    used: list[int]  # IPUs in use from that time on
    running: list[int]
    queued: list[int]  # jobs waiting that may run (submitted, begun, not started)

    def rows(self, policy: str, seed: int | None, pod_ipus: int) -> Iterable[dict]:
        for t, u, r, q in zip(self.times, self.used, self.running, self.queued):
            yield {"policy": policy, "seed": seed, "time": t, "used_ipus": u, "utilisation": u / pod_ipus,
                   "running_jobs": r, "queued_jobs": q}

    def average(self, values: Sequence[int], end: float) -> float | None:
        """The time-weighted mean of `values` from the first step to `end`; None (undefined) over no time."""
        if not self.times or end <= self.times[0]:
            return None
        total = 0.0
        for i, v in enumerate(values):
            until = self.times[i + 1] if i + 1 < len(self.times) else end
            total += v * (min(until, end) - self.times[i])
        return total / (end - self.times[0])


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index of `values`: 1 when all are equal, 1/n when one holds everything; None (undefined)
    for none."""
    if not values:
        return None
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square else 1.0


def user_fairness(jobs: Sequence[JobFigures]) -> float | None:
    """Jain's index over each user's mean bounded slowdown."""
    per_user: dict[str, list[float]] = {}
    for j in jobs:
        if j.bounded_slowdown is not None:
            per_user.setdefault(j.user, []).append(j.bounded_slowdown)
    return jain([sum(v) / len(v) for _, v in sorted(per_user.items())])
