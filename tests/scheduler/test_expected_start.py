"""sbatch --test-only: when a job would start if queued now, worked out on a read copy; the live queue, its order and
its next job id are left exactly as they were."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.scheduler import Scheduler

from tests.scheduler.builders import make, spec


def expect(s: Scheduler, now: float, **fields):
    return s.view().expected_start(parse_spec(spec(**fields)), now, s.free_mask, None)


def busy() -> Scheduler:
    """Job 1 holds 8 IPUs until 100, job 2 the other 8 until 200; job 3 (16 IPUs) waits for both."""
    s = make()
    s.submit(spec(ipus=8, time_limit=100, workload={"kind": "hold"}), 0)
    s.submit(spec(ipus=8, time_limit=200, workload={"kind": "hold"}), 0)
    s.cycle(0)
    s.submit(spec(ipus=16, time_limit=50), 5)
    s.cycle(5)
    return s


def test_on_an_idle_pod_a_job_would_start_now_and_nothing_is_queued():
    s = make()
    x = expect(s, 10, ipus=4)
    assert (x.job_id, x.start, x.reason, x.partition, x.allocation, x.ipus) == (1, 10, "", "slurm_1", "default", 4)
    assert x.first_ipu == 0  # the block a start now would take: sbatch --test-only names its nodes
    assert s.table.jobs == {} and s.table.next_id == 1
    s.submit(spec(ipus=8, time_limit=100, workload={"kind": "hold"}), 10)
    s.cycle(10)
    assert expect(s, 11, ipus=8)[4:] == (11, "", 8)  # beside the running job's IPUs 0-7


def test_a_job_behind_the_queue_gets_its_reservation():
    s = busy()
    before = list(s.order.iterate(10, gated=True))
    x = expect(s, 10, ipus=16, time_limit=60)
    assert (x.job_id, x.start, x.reason, x.first_ipu) == (4, 250, "Priority", 0)  # after job 3's 50 s from 200
    assert list(s.order.iterate(10, gated=True)) == before and 4 not in s.table.jobs
    small = expect(s, 10, ipus=8, time_limit=60)
    assert (small.start, small.reason, small.first_ipu) == (100, "Priority", 0)  # job 1's block, freed at 100


def test_a_high_qos_job_would_start_ahead_of_the_waiting_one():
    x = expect(busy(), 10, ipus=16, time_limit=60, qos="high")
    assert (x.start, x.reason) == (200, "Resources")


def test_held_or_dependent_jobs_have_no_start_time_and_a_begin_time_delays_it():
    s = busy()
    assert expect(s, 10, ipus=1, hold=True)[4:6] == (None, "JobHeldUser")
    assert expect(s, 10, ipus=1, dependency="afterok:1")[4:6] == (None, "Dependency")
    s.cancel([1], 11)
    assert expect(s, 12, ipus=1, dependency="afterok:1")[4:6] == (None, "DependencyNeverSatisfied")
    assert expect(s, 12, ipus=1, dependency="afterany:1").reason != "Dependency"
    # waiting only for its begin time: BeginTime, as `vipu queue` says (walk22d defect 10), on a busy Pod too
    assert expect(make(), 10, ipus=1, begin="now+500")[4:] == (510, "BeginTime", None)  # no block worked out for 510
    assert expect(s, 12, ipus=16, begin="now+500")[4:6] == (512, "BeginTime")
    assert expect(make(), 10, ipus=1)[4:6] == (10, "")


def test_what_a_submit_refuses_a_test_refuses():
    with pytest.raises(InvalidArgument, match="qos 'gold' is unknown"):
        expect(make(), 0, qos="gold")
    with pytest.raises(InvalidArgument, match="dependency names job 7, which does not exist"):
        expect(make(), 0, dependency="afterok:7")
