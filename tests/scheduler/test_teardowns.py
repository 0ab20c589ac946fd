"""Runs still torn down after their stop (a program given KillWait to end, Slurm's completing jobs): their IPUs are
busy, free by the end of KillWait at the latest, and backfill counts on them then."""

from __future__ import annotations

import pytest

from tests.scheduler.builders import RecordingJournal, make, sleep, spec
from tests.scheduler.test_recovery import stored
from vipu.control.driver import Driver, Timers
from vipu.errors import FailedPrecondition
from vipu.scheduler.gate_openings import Teardown
from vipu.scheduler.job_states import JobState

S = JobState
KILL_WAIT = 5.0


def queue_behind_full_pod(s, step) -> None:
    """Pod16 filled by a 4-IPU job (1, its program lingers through KillWait) and fillers of 8 and 4 (2, 3); then
    a 16-IPU job for 120 s (4) and, behind it, a 4-IPU job for 600 s (5). `step(now)` runs a cycle."""
    for ipus in (4, 8, 4):
        s.submit(spec(ipus=ipus, time_limit=600, workload=sleep(1000)), 0)
    step(0)
    s.submit(spec(ipus=16, time_limit=120, workload=sleep(5)), 1)
    s.submit(spec(ipus=4, time_limit=600, workload=sleep(600)), 2)
    step(2)


def full_pod_then_big_and_small(policy: str = "backfill"):
    """queue_behind_full_pod, then at 10 the three running jobs cancelled."""
    s = make(policy=policy)
    queue_behind_full_pod(s, s.cycle)
    stops = s.cancel([1, 2, 3], 10)
    stub = next(stop for stop in stops if stop.job_id == 1)
    s.cleaning(1, 10, Teardown(10 + KILL_WAIT, stub.first_ipu, stub.ipus))
    return s


@pytest.mark.parametrize("policy", ["backfill", "sjf"])
def test_a_lower_priority_job_does_not_take_ipus_the_top_job_gets_when_a_teardown_ends(policy):
    """newcomer walk: small4 started at once and big16's start moved from KillWait later to small4's end."""
    s = full_pod_then_big_and_small(policy)
    assert s.cycle(10) == []
    assert (s.job(4).reason, s.job(4).estimated_start) == ("Resources", 10 + KILL_WAIT)
    assert (s.job(5).state, s.job(5).reason) == (S.PENDING, "Priority")
    assert s.free_mask == (1 << 16) - 1 - (0xF << s.job(1).first_ipu)  # the lingering run's IPUs are busy
    s.cleaned(1, 13)  # its program ended before KillWait ran out
    assert [e.job_id for e in s.cycle(13)] == [4]


def test_a_teardown_past_its_bound_still_holds_its_ipus_and_counts_as_just_about_to_end():
    """A program that outlives KillWait (its supervisor still waits): nothing starts on its IPUs, and the top job
    still waits for them rather than for the small job's end."""
    s = full_pod_then_big_and_small()
    assert s.cycle(30) == []
    assert s.job(4).reason == "Resources" and 30 < s.job(4).estimated_start < 31
    assert s.job(5).state is S.PENDING


def test_a_job_that_fits_beside_the_teardown_and_ends_before_it_backfills():
    """Backfill still starts what delays nobody: a job that ends before the top job's start."""
    s = full_pod_then_big_and_small()
    s.submit(spec(ipus=4, time_limit=3, workload=sleep(3)), 10)
    assert [e.job_id for e in s.cycle(10)] == [6]
    assert s.job(4).estimated_start == 10 + KILL_WAIT and s.job(5).state is S.PENDING


def test_the_driver_gives_the_teardown_the_executors_bound():
    """The executor says how long a stopped run may go on (KillWait): the driver hands the scheduler that bound
    with the run's block."""
    class Lingering(Timers):
        def stop(self, stop):
            super().stop(stop)
            return KILL_WAIT if stop.job_id == 1 else None

    s = make()
    driver = Driver(s, Lingering())
    queue_behind_full_pod(s, driver.step)
    driver.apply(s.cancel([1, 2, 3], 10), 10)
    assert s.table.cleaning == {1: (10 + KILL_WAIT, s.job(1).first_ipu, 4)}
    driver.step(10)
    assert s.job(4).estimated_start == 10 + KILL_WAIT and s.job(5).state is S.PENDING


def test_a_job_whose_program_is_still_ending_shows_completing_until_its_teardown_ends():
    """squeue shows CG (JOB_COMPLETING over the base state) while sacct keeps CANCELLED; a second scancel is
    refused as already completing; the listing's state filter sees CG."""
    s = full_pod_then_big_and_small()
    view = s.view()
    assert [(j.id, j.state) for j in view.queue() if j.state is not S.PENDING] == [(1, S.COMPLETING)]
    assert [j.id for j in view.queue(lambda j: j.state is S.COMPLETING)] == [1]
    assert view.job(1).state is S.COMPLETING and s.job(1).state is S.COMPLETING
    assert (view.job(1).exit_code, view.job(1).signal) == (None, 15)  # walk32: ExitCode 0:0 while CG, as sacct's 0:15
    assert [j.id for j in view.completing()] == [1]
    assert [(j.id, j.state) for j in view.history() if j.id == 1] == [(1, S.CANCELLED)]
    with pytest.raises(FailedPrecondition, match="job 1 is already COMPLETING: it ended CANCELLED"):
        s.cancel([1], 11)
    s.cleaned(1, 12)
    assert s.job(1).state is S.CANCELLED and s.view().completing() == []
    assert all(j.id != 1 for j in s.view().queue())
    with pytest.raises(FailedPrecondition, match=r"job 1 already ended \(CANCELLED\)"):
        s.cancel([1], 13)


def test_a_requeued_job_still_torn_down_is_pending_with_reason_cleaning_not_completing():
    s = make()
    s.submit(spec(ipus=4, time_limit=600, workload=sleep(1000)), 0)
    s.cycle(0)
    (stop,) = s.requeue(1, 5)
    s.cleaning(1, 5, Teardown(5 + KILL_WAIT, stop.first_ipu, stop.ipus))
    assert (s.job(1).state, s.job(1).reason) == (S.PENDING, "Cleaning") and s.view().completing() == []


def test_after_a_restart_a_lost_runs_teardown_holds_the_top_jobs_reservation():
    """newcomer walk, after kill -9: the program of a run the restart ended still ends through KillWait; a lower
    job did start while the 16-IPU job waited on it. Its stop now carries its block, and the driver its bound."""
    journal = RecordingJournal()
    old = make(journal=journal)
    old.submit(spec(ipus=4, time_limit=600, workload=sleep(1000)), 0)
    old.cycle(0)
    old.submit(spec(ipus=16, time_limit=120, workload=sleep(5)), 1)
    old.submit(spec(ipus=4, time_limit=600, workload=sleep(600)), 2)
    old.cycle(2)
    s = make()
    (stop,) = s.recover(stored(journal), now=50, partitions=["slurm_1"], resumable=lambda job: False)
    assert (stop.job_id, stop.first_ipu, stop.ipus) == (1, old.job(1).first_ipu, 4)

    class Lingering(Timers):
        def stop(self, stop):
            return KILL_WAIT  # its supervisor from before the restart still stops the program

    driver = Driver(s, Lingering())
    driver.apply([stop], 50)
    driver.step(50)
    assert (s.job(1).state, s.job(1).reason) == (S.PENDING, "Cleaning")
    assert (s.job(2).reason, s.job(2).estimated_start) == ("Resources", 50 + KILL_WAIT)
    assert s.job(3).state is S.PENDING


def test_after_a_restart_a_requeued_runs_teardown_holds_its_block_as_without_one():
    """newcomer walk: `vipu requeue` of a job deaf to SIGTERM, then kill -9 and a restart while its program still
    ran: the job was PD (Cleaning) but its IPUs showed allocated, not completing, as the teardown held none. The
    restart's stop of the partition it kept now names the block of its last run (its own first_ipu is cleared)."""
    journal = RecordingJournal()
    old = make(journal=journal)
    old.submit(spec(ipus=4, time_limit=600, workload=sleep(1000)), 0)
    old.submit(spec(ipus=4, time_limit=600, workload=sleep(1000)), 0)
    old.cycle(0)
    first = old.job(2).first_ipu
    old.requeue(2, 5)
    s = make()
    (stop,) = s.recover(stored(journal), now=50, partitions=["slurm_1", "slurm_2"], resumable=lambda job: True)
    assert (stop.job_id, stop.state, stop.first_ipu, stop.ipus) == (2, S.PENDING, first, 4)

    class Lingering(Timers):
        def stop(self, stop):
            return KILL_WAIT  # its supervisor from before the restart still stops the program

    Driver(s, Lingering()).apply([stop], 50)
    assert s.table.cleaning == {2: (50 + KILL_WAIT, first, 4)} and s.table.cleaning_mask == 0xF << first
    assert (s.job(2).state, s.job(2).reason) == (S.PENDING, "Cleaning") and s.view().completing() == []
    assert s.table.teardowns(0) == [(50 + KILL_WAIT, first, 4)]
