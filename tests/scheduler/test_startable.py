"""startable(): the pending jobs that could start now, against which VipuQueueStuck fires. A busy Pod has none; a
job that fits and waits for nothing but a cycle counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pytest

from tests.scheduler.builders import POD64, make, spec

LONG = {"kind": "sleep", "duration": 3000}


def running(s, *sizes: int, now: float = 0.0) -> None:
    """Start jobs of these sizes (one cycle), so their IPUs are allocated."""
    for ipus in sizes:
        s.submit(spec(ipus=ipus, time_limit=3600, workload=LONG), now)
    s.cycle(now)
    assert len(s.table.running) == len(sizes)


def busy_pod64_with_a_16_ipu_job_first_in_line(s):
    running(s, 32, 16, 8, 4)  # 60 of 64 IPUs allocated, 4 idle
    s.submit(spec(ipus=16), 1)
    s.cycle(2)


def a_job_no_cycle_has_seen(s):
    s.submit(spec(ipus=4), 0)


def ipus_freed_since_the_last_cycle(s):
    busy_pod64_with_a_16_ipu_job_first_in_line(s)
    s.job_finished(2, 3)  # the 16-IPU job's block is free; no cycle has run since: it still says Resources


def a_held_job(s):
    s.submit(spec(ipus=4, hold=True), 0)
    s.cycle(1)


def a_small_job_behind_a_reservation(s):
    """Backfill keeps the free IPUs for the 64-IPU job first in line: the 4-IPU job, too long to finish before it
    starts, waits for Priority although it fits."""
    running(s, 32)
    s.submit(spec(ipus=64, time_limit=600), 1)
    s.submit(spec(ipus=4, time_limit=86400), 2)
    s.cycle(3)
    assert s.job(3).reason == "Priority"


def a_job_waiting_on_a_dependency(s):
    running(s, 4)
    s.submit(spec(ipus=4, dependency="afterok:1"), 1)
    s.cycle(2)


@dataclass
class Case:
    name: str
    setup: Callable
    want: int
    masks: dict = field(default_factory=dict)  # available_mask / allowed_masks, as the controller passes them


CASES = [
    Case("busy Pod: first in line does not fit", busy_pod64_with_a_16_ipu_job_first_in_line, 0),
    Case("fits, no cycle yet", a_job_no_cycle_has_seen, 1),
    Case("fits once IPUs freed, no cycle since", ipus_freed_since_the_last_cycle, 1),
    Case("held", a_held_job, 0),
    Case("behind a backfill reservation", a_small_job_behind_a_reservation, 0),
    Case("dependency not met", a_job_waiting_on_a_dependency, 0),
    Case("free IPUs outside its allocation", a_job_no_cycle_has_seen, 0,
         {"available_mask": 0xFF00, "allowed_masks": {"default": 0x00FF}}),
    Case("free IPUs inside its allocation", a_job_no_cycle_has_seen, 1,
         {"available_mask": 0xFF00, "allowed_masks": {"default": 0x0F00}}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_startable(case):
    s = make(POD64)
    case.setup(s)
    assert s.view().startable(**case.masks) == case.want
