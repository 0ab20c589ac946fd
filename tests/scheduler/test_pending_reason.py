"""pending_reason(): the one place a pending job's reason and estimated start are worked out. `vipu queue` and
`vipu show job` show what it says, and startable counts the jobs it gives Resources or nothing, so for every kind of
wait it must agree with the queue, field for field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest

from vipu.scheduler.reasons import pending_reason

from tests.scheduler.builders import POD16, make, spec

LONG = {"kind": "sleep", "duration": 3000}


def fill_the_pod(s) -> None:
    s.submit(spec(ipus=16, time_limit=3600, workload=LONG), 0)
    s.cycle(0)


def held_by_its_user(s):
    s.submit(spec(hold=True), 1)
    s.cycle(2)


def held_by_an_admin(s):
    [job] = s.submit(spec(), 1)
    s.hold(job.id, 1, admin=True)
    s.cycle(2)


def begin_time_to_come(s):
    s.submit(spec(begin="now+10m"), 100)
    s.cycle(101)


def dependency_not_met(s):
    fill_the_pod(s)
    s.submit(spec(dependency="afterok:1"), 1)
    s.cycle(2)


def first_in_line_on_a_full_pod(s):
    fill_the_pod(s)
    s.submit(spec(ipus=4), 1)
    s.cycle(2)


def behind_a_higher_priority_job(s):
    first_in_line_on_a_full_pod(s)
    s.submit(spec(ipus=4), 3)
    s.cycle(4)


def no_cycle_yet(s):
    s.submit(spec(), 0)


@dataclass
class Case:
    name: str
    setup: Callable  # the job asked about is the last one it submits
    want_reason: str | None
    want_estimate: float | None = None


CASES = [
    Case("held by its user", held_by_its_user, "JobHeldUser"),
    Case("held by an admin", held_by_an_admin, "JobHeldAdmin"),
    Case("begin time to come", begin_time_to_come, "BeginTime", 700),
    Case("dependency not met", dependency_not_met, "Dependency"),
    Case("first in line, Pod full", first_in_line_on_a_full_pod, "Resources", 3600),
    Case("behind a higher-priority job", behind_a_higher_priority_job, "Priority", 3600),
    Case("no cycle has seen it", no_cycle_yet, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pending_reason_is_what_the_queue_shows(case):
    s = make(POD16, policy="backfill")
    case.setup(s)
    job_id = max(s.table.jobs)
    reason, estimate = pending_reason(s, s.table.jobs[job_id]) or (None, None)
    assert (reason, estimate) == (case.want_reason, case.want_estimate)
    [queued] = [j for j in list(s.view().queue()) if j.id == job_id]
    shown = s.job(job_id)
    assert (queued.reason, queued.estimated_start) == (shown.reason, shown.estimated_start) == (reason, estimate)
