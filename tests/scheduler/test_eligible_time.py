"""EligibleTime (scontrol) and Eligible (sacct): when a job became eligible, stored as it happens. Unknown (None)
while it is held or waits on its dependency; a begin time to come is its eligible time."""

from vipu.scheduler.job_record import Job
from vipu.scheduler.updates import JobUpdate

from tests.scheduler.builders import make, spec
from tests.scheduler.test_recovery import stored

HOLD = {"kind": "hold"}


def test_eligible_time_is_when_nothing_held_the_job_back_any_more_and_survives_a_restart(journal):
    s = make(journal=journal)
    s.submit(spec(ipus=16, workload=HOLD, time_limit=3600), 0)  # job 1
    s.submit(spec(hold=True), 0)  # job 2
    s.submit(spec(dependency="after:1+1"), 0)  # job 3: met a minute after job 1 starts
    s.submit(spec(begin="now+500"), 0)  # job 4
    s.submit(spec(), 5)  # job 5: eligible at once
    s.submit(spec(dependency="afterok:1"), 5)  # job 6
    s.cycle(10)
    assert [s.job(i).eligible_time for i in range(1, 7)] == [0, None, None, 500, 5, None]
    s.release(2, 40)
    s.cycle(70)
    s.hold(5, 80)
    s.update(6, JobUpdate(dependency=""), 85)  # its dependency dropped: eligible from then
    assert [s.job(i).eligible_time for i in range(1, 7)] == [0, 40, 70, 500, None, 85]
    recovered = make()
    recovered.recover(stored(journal), now=100, partitions=["slurm_1"])
    assert [recovered.job(i).eligible_time for i in range(1, 7)] == [0, 40, 70, 500, None, 85]
    recovered.cycle(100)  # the met dependency is evaluated again: job 3 keeps when it first became eligible
    assert recovered.job(3).eligible_time == 70
    recovered.requeue(1, 110, hold=True)
    assert recovered.job(1).eligible_time is None
    recovered.release(1, 120)
    assert recovered.job(1).eligible_time == 120


def test_a_record_stored_before_eligible_time_was_kept_shows_its_submit_or_begin_time():
    old = make().submit(spec(begin="now+30"), 10)[0].model_dump(exclude={"eligible_time"})
    assert Job.model_validate(old).eligible == 40
    assert make().submit(spec(hold=True), 10)[0].eligible is None
