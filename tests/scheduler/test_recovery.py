"""Recovery after a crash: rebuild from the stored records; running jobs keep running only if their partition does."""

import pytest

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.scheduler.effects import StopJob
from vipu.scheduler.job_record import KINDS, EndedRun, SchedulerMeta
from vipu.scheduler.job_states import JobState
from vipu.scheduler.view import history_rows
from vipu.scheduler.workload import RunExit

from vipu.control.driver import Driver, Timers
from tests.scheduler.builders import RecordingJournal, make, spec

S = JobState


def stored(journal: RecordingJournal):
    """The records as a store would return them after a restart: through JSON."""
    return [(kind, KINDS[kind].model_validate_json(record.model_dump_json()))
            for (kind, _), record in journal.records.items()]


def crashed_world():
    journal = RecordingJournal()
    s = make(journal=journal)
    s.submit(spec(ipus=4), 0, request_id="r1")  # 1: will keep running
    s.submit(spec(ipus=4), 0)  # 2: its partition is lost
    s.submit(spec(ipus=4, requeue=False), 0)  # 3: lost too, but may not be requeued
    s.submit(spec(ipus=4), 0)  # 4: finishes
    s.cycle(0)
    s.job_finished(4, 5)
    s.submit(spec(ipus=16), 6)  # 5: pending
    s.cycle(6)
    return s, journal


def test_recover_keeps_live_partitions_and_requeues_lost_ones():
    old, journal = crashed_world()
    new_journal = RecordingJournal()
    s = make(journal=new_journal)
    effects = s.recover(stored(journal), now=100, partitions=["slurm_1", "slurm_4", "user-part"])
    assert effects == [StopJob(4, "slurm_4", S.COMPLETED, False, 12, 4)]  # a leftover partition of an ended job
    assert s.job(1).state is S.RUNNING and s.job(1).end_by == old.job(1).end_by
    assert (s.job(2).state, s.job(2).requeue_count) == (S.PENDING, 1)
    assert s.job(3).state is S.NODE_FAIL and s.job(4).state is S.COMPLETED and s.job(5).state is S.PENDING
    (puts, _), = new_journal.commits
    assert sorted(n for k, n, _ in puts if k == "job") == ["1", "2", "3"]  # each says what the restart did
    assert s.job(1).recovery == "resumed after the controller's restart: its partition slurm_1 survived"
    assert s.job(2).recovery == ("ended NODE_FAIL at the controller's restart, requeued: its partition was lost with"
                                 " the controller")
    assert s.job(3).recovery == ("ended NODE_FAIL at the controller's restart, not requeued (its spec says requeue:"
                                 " false): its partition was lost with the controller")
    # every lost run says why in words (regression: from the second on, the why was the set of ids lost so far)
    assert [s.job(i).ended_by for i in (2, 3)] == [
        "the controller stopped while it ran: its partition was lost with the controller"] * 2
    assert s.job(4).recovery is None and s.job(5).recovery is None
    assert s.table.used_mask == old.table.used_mask & (((1 << 4) - 1) << old.job(1).first_ipu)
    # ids go on from where they stopped, and a retried request still finds its job
    assert s.submit(spec(), 101)[0].id == 6
    assert [j.id for j in s.submit(spec(ipus=4), 101, request_id="r1")] == [1]
    # the recovered queue schedules normally: job 1 is past its time limit, then the 16-IPU job goes first
    driver = Driver(s, Timers())
    driver.watch(lambda job: None)  # its workload (a hold) never ends by itself
    driver.step(101)
    assert s.job(1).state is S.TIMEOUT
    assert s.job(1).end_time == old.job(1).end_by  # when its time ran out, not when the restart noticed
    assert s.job(5).state is S.RUNNING and s.job(2).reason == "Resources"


def test_recover_without_partition_information_requeues_every_running_job():
    _, journal = crashed_world()
    s = make()
    s.recover(stored(journal), now=100)
    assert [s.job(i).state for i in (1, 2, 3)] == [S.PENDING, S.PENDING, S.NODE_FAIL]
    assert s.table.used_mask == 0


def test_the_persisted_counter_wins_so_ids_are_never_reused():
    _, journal = crashed_world()
    records = stored(journal) + [("scheduler_meta", SchedulerMeta(next_job_id=42))]
    s = make()
    s.recover(records, now=100)
    assert s.submit(spec(), 100)[0].id == 42


def test_first_job_id_moves_ids_past_an_older_copy_of_the_state_and_never_back():
    """Slurm's FirstJobId: after restoring a backup older than the ids users have seen, the next id is set above
    them; a stored counter that is higher still wins."""
    _, journal = crashed_world()
    s = make(first_job_id=1000)
    s.recover(stored(journal), now=100)
    assert s.submit(spec(), 100)[0].id == 1000
    s = make(first_job_id=10)
    s.recover(stored(journal) + [("scheduler_meta", SchedulerMeta(next_job_id=42))], now=100)
    assert s.submit(spec(), 100)[0].id == 42
    assert make(first_job_id=7).submit(spec(), 0)[0].id == 7  # a fresh state (and a replay) too


def test_recover_needs_a_fresh_scheduler_and_ignores_other_kinds():
    _, journal = crashed_world()
    s = make()
    s.recover(stored(journal) + [("partition", object())], now=100)
    with pytest.raises(FailedPrecondition, match="empty scheduler"):
        s.recover(stored(journal), now=100)


def test_completing_job_finishes_with_its_exit_code():
    """A COMPLETING record (stored by a controller of an earlier version, whose workloads exited before their
    partitions went) finishes with the exit code it recorded."""
    journal = RecordingJournal()
    s = make(journal=journal)
    s.submit(spec(), 0)
    s.cycle(0)
    journal.commit([("job", "1", s.job(1).moved(S.COMPLETING, 5, exit_code=2))], [])
    fresh = make()
    fresh.recover(stored(journal), now=9, partitions=[])
    assert fresh.job(1).state is S.FAILED and fresh.job(1).exit_code == 2


@pytest.mark.parametrize("name, job", [
    ("slurm_42", 42), ("slurm_0", 0), ("slurm_", None), ("slurm_4x", None), ("mine", None), ("xslurm_4", None),
    ("slurm_042", None), ("slurm_-1", None),
])
def test_only_the_schedulers_partition_names_map_back_to_a_job(name, job):
    from vipu.partition.rules import job_of_partition, job_partition_name

    assert job_of_partition(name) == job
    if job is not None:
        assert job_partition_name(job) == name


def test_a_run_that_cannot_resume_ends_even_when_its_partition_survived():
    _, journal = crashed_world()
    s = make()
    effects = s.recover(stored(journal), now=100, partitions=["slurm_1"], resumable=lambda job: False)
    assert s.job(1).state is S.PENDING and s.job(1).requeue_count == 1
    assert "its workload does not outlive the controller" in s.job(1).recovery
    # what ended the run, for `vipu show job` and a training job's logs (an earlier cause is no longer the last)
    assert s.job(1).ended_by.startswith("the controller stopped while it ran: its workload does not outlive the"
                                        " controller")
    assert StopJob(1, "slurm_1", S.NODE_FAIL, True, 0, 4) in effects  # its surviving partition is removed


def test_a_qos_removed_from_the_config_keeps_its_jobs():
    """Restarted without a QOS that stored jobs name: the restart crashed on the first lookup (KeyError), and a
    requeue once it was up lost the job. Now (Slurm's InvalidQOS) running jobs go on, pending ones are held for an
    admin with a note saying why, and new jobs may not name the QOS."""
    journal = RecordingJournal()
    qos = {"low": {"priority": 0}, "normal": {"priority": 50}, "capped": {"priority": 80, "max_ipus": 16}}
    old = make(journal=journal, qos=qos)
    old.submit(spec(ipus=4, qos="capped"), 0)  # 1: runs
    old.cycle(0)
    old.submit(spec(ipus=16, qos="capped"), 1)  # 2: waits for the whole Pod
    old.submit(spec(ipus=4, qos="normal", hold=True), 1)  # 3: a job of a QOS still there
    old.cycle(1)
    assert [old.job(i).state for i in (1, 2)] == [S.RUNNING, S.PENDING]
    s = make(journal=RecordingJournal())  # the default QOS table: no "capped"
    s.recover(stored(journal), now=10, partitions=["slurm_1"])
    assert s.retired_qos == {"capped"}
    assert s.job(1).state is S.RUNNING and s.job(2).admin_hold and s.job(2).reason == "JobHeldAdmin"
    assert "its qos capped is no longer in the scheduler config" in s.job(2).recovery
    assert s.job(3).held and not s.job(3).admin_hold and s.job(3).recovery is None  # its QOS is still there
    s.release(3, 10)
    s.cycle(10)
    assert s.job(3).state is S.RUNNING  # job 2, held, no longer reserves the Pod
    s.requeue(1, 11)  # what lost the job: it is pending again, under a stand-in QOS of priority 0
    assert s.job(1).state is S.PENDING and s.priority(1, 11).qos == 0
    s.release(2, 12, admin=True)
    assert not s.job(2).held
    with pytest.raises(InvalidArgument) as refused:
        s.submit(spec(qos="capped"), 13)
    assert "qos 'capped' is no longer in the scheduler config" in refused.value.message


def test_a_lost_run_ends_when_its_program_did_where_that_was_recorded():
    """A program that ended while the controller was away (its supervisor recorded when): its run ends then, not at
    the restart, so the outage is no run time (End, Elapsed, `vipu history -D`, the usage charged); where nothing was
    recorded, or a record of another run (before this one's start), the run ends at the restart as before."""
    journal = RecordingJournal()
    old = make(journal=journal)
    for user in ("requeued", "kept", "unrecorded", "stale"):
        old.submit(spec(ipus=4, user=user, requeue=user != "kept"), 0)  # jobs 1-4
    old.cycle(10)
    ends = {1: RunExit(30.0, 0, 15), 2: RunExit(40.0, 3, 0), 4: RunExit(5.0, 0, 0)}
    s = make()
    s.recover(stored(journal), now=100, recorded_end=lambda job: ends.get(job.id))
    requeued, kept = s.job(1), s.job(2)
    # back in the queue at the restart; the lost run keeps how its program ended (SIGTERM) and where it ran
    assert requeued.history[-2:] == [(S.NODE_FAIL, 30.0, EndedRun(0, 15, 0)), (S.PENDING, 100, None)]
    [run] = [r for _, _, r in history_rows([requeued], duplicates=True) if r.state is S.NODE_FAIL]
    assert (run.start_time, run.end_time, run.exit_code, run.signal, run.first_ipu) == (10, 30.0, 0, 15, 0)
    assert (kept.state, kept.end_time, kept.exit_code, kept.signal) == (S.NODE_FAIL, 40.0, 3, 0)
    assert kept.recovery.endswith("; it ended when its program did, as recorded where it ran")
    assert s.job(3).history[-2][:2] == (S.NODE_FAIL, 100) and s.job(4).history[-2][:2] == (S.NODE_FAIL, 100)
    usage = s.fairshare.usage()
    assert usage["requeued"] == (4 * 20.0, 30.0) and usage["kept"] == (4 * 30.0, 40.0)
    assert usage["unrecorded"] == usage["stale"] == (4 * 90.0, 100)


def test_a_recorded_end_after_the_restart_is_taken_as_the_restart():
    """Another node's clock may run ahead: a run never ends after the restart that ended it."""
    journal = RecordingJournal()
    old = make(journal=journal)
    old.submit(spec(ipus=4, requeue=False), 0)
    old.cycle(0)
    s = make()
    s.recover(stored(journal), now=100, recorded_end=lambda job: RunExit(100.5, 0, 0))
    assert (s.job(1).end_time, s.job(1).exit_code) == (100, 0)
