"""Ended jobs leave memory after min_job_age (MinJobAge) for the Journal's history, and nothing that needs them breaks."""

import pytest
from hypothesis import given, settings, strategies as st

from vipu.errors import AlreadyExists, InvalidArgument, NotFound, Unavailable
from vipu.scheduler.job_record import HISTORY_KIND, KINDS
from vipu.scheduler.job_states import JobState

from tests.scheduler.builders import RecordingJournal, make, spec

S = JobState


def ran(s, job_id: int, start: float, end: float) -> None:
    """Job `job_id` runs from a cycle at `start` and completes at `end`."""
    s.cycle(start)
    assert s.job(job_id).state is S.RUNNING
    s.job_finished(job_id, end)


def test_a_job_leaves_memory_once_it_has_been_ended_min_job_age_and_goes_to_the_history_in_one_commit():
    journal = RecordingJournal()
    s = make(journal=journal, min_job_age=300)
    s.submit(spec(ipus=4), 0)
    s.submit(spec(ipus=4), 0)
    ran(s, 1, 0, 10)
    ran(s, 2, 10, 100)
    assert s.purge(309) == []  # job 1 ended 299 s ago
    before = len(journal.commits)
    assert [j.id for j in s.purge(310)] == [1]
    (puts, deletes), = journal.commits[before:]
    assert [(k, n) for k, n, _ in puts] == [(HISTORY_KIND, "1"), ("purged_usage", "scheduler")]
    assert deletes == [("job", "1")]
    assert puts[0][2].state is S.COMPLETED and 1 not in s.table.jobs and 2 in s.table.jobs
    with pytest.raises(NotFound, match=r"job 1 has ended and left the queue \(min_job_age\); `vipu history -j 1`"):
        s.job(1)
    assert s.submit(spec(), 400)[0].id == 3  # ids are never handed out again


def test_a_move_the_journal_refuses_leaves_memory_as_it_was_and_is_tried_again():
    """Regression: a failing history write must keep the job in memory (and its usage uncharged twice)."""
    journal = RecordingJournal()
    s = make(journal=journal, min_job_age=300)
    s.submit(spec(ipus=4), 0)
    ran(s, 1, 0, 10)
    refusing = journal.commit
    journal.commit = lambda puts, deletes: (_ for _ in ()).throw(Unavailable("the history cannot be written"))
    with pytest.raises(Unavailable):
        s.purge(400)
    assert s.job(1).state is S.COMPLETED and s.purged.usage() == {}
    journal.commit = refusing
    assert [j.id for j in s.purge(401)] == [1] and 1 not in s.table.jobs
    assert s.purged.usage() == {"nobody": (40.0, 10)}


def test_min_job_age_zero_keeps_every_job():
    s = make(journal=RecordingJournal(), min_job_age=0)
    s.submit(spec(), 0)
    ran(s, 1, 0, 1)
    assert s.purge(1e9) == [] and 1 in s.table.jobs


def test_an_array_leaves_memory_only_with_its_last_task():
    s = make(journal=RecordingJournal(), min_job_age=60)
    s.submit(spec(ipus=16, array="0-1"), 0)  # one task at a time on a Pod16
    ran(s, 1, 0, 10)
    assert s.purge(500) == []  # task 1 still pending
    ran(s, 2, 500, 510)
    assert s.purge(569) == []
    assert sorted(j.id for j in s.purge(570)) == [1, 2] and not s.table.arrays


def test_a_job_a_waiting_dependency_names_stays_until_the_dependency_no_longer_waits():
    s = make(journal=RecordingJournal(), min_job_age=60)
    s.submit(spec(ipus=16), 0)  # 1
    s.submit(spec(ipus=16), 0)  # 2 holds the Pod, so 3 waits on resources, not on 1
    s.submit(spec(ipus=16, dependency="afterok:1", hold=True), 0)  # 3: gated (held), still watching 1
    ran(s, 1, 0, 10)
    assert s.purge(1000) == []  # job 3 still reads job 1's outcome
    s.cancel([3], 1001)
    assert [j.id for j in s.purge(1002)] == [1]


def test_a_dependency_on_a_purged_job_is_refused_naming_the_field_and_the_history():
    s = make(journal=RecordingJournal(), min_job_age=60)
    s.submit(spec(), 0)
    ran(s, 1, 0, 10)
    s.purge(100)
    with pytest.raises(InvalidArgument, match="dependency names job 1, which ended more than min_job_age ago") as e:
        s.submit(spec(dependency="afterok:1"), 101)
    assert e.value.violations[0][0] == "dependency" and "`vipu history -j 1`" in str(e.value)


def test_a_retried_request_id_finds_its_jobs_in_the_history():
    s = make(journal=RecordingJournal(), min_job_age=60)
    (first,) = s.submit(spec(ipus=2), 0, request_id="r1")
    ran(s, 1, 0, 10)
    purged = {j.id: j for j in s.purge(100)}
    s.recall = lambda user, request_id: [purged[1]] if (user, request_id) == (first.user, "r1") else []
    assert [j.id for j in s.submit(spec(ipus=2), 101, request_id="r1")] == [1]
    with pytest.raises(AlreadyExists, match="request_id 'r1' was already used for job 1 with a different spec"):
        s.submit(spec(ipus=4), 101, request_id="r1")


def test_a_requeued_job_is_not_purged_by_its_old_end():
    s = make(journal=RecordingJournal(), min_job_age=60)
    s.submit(spec(ipus=16), 0)
    ran(s, 1, 0, 10)
    s.requeue(1, 20)
    assert s.purge(1000) == [] and s.job(1).state is S.PENDING


def stored(journal: RecordingJournal):
    return [(kind, KINDS[kind].model_validate_json(record.model_dump_json()))
            for (kind, _), record in journal.records.items() if kind in KINDS]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from([1, 2, 4, 8]), st.integers(1, 500)),
                min_size=1, max_size=12), st.integers(0, 3000))
def test_fair_share_after_a_restart_is_the_same_whether_or_not_jobs_were_purged(jobs, purge_at):
    """The usage of purged jobs moves into one sum per user; a restart charges exactly what it would have."""
    worlds = []
    for age in (0, 60):  # 0: nothing purged
        journal = RecordingJournal()
        s = make(journal=journal, min_job_age=age)
        t = 0.0
        for user, ipus, runtime in jobs:
            (job,) = s.submit(spec(ipus=ipus, user=user), t)
            ran(s, job.id, t, t + runtime)
            t += runtime
        s.purge(t + purge_at)
        restarted = make(journal=RecordingJournal(), min_job_age=age)
        restarted.recover(stored(journal), now=t + purge_at)
        worlds.append(restarted.fairshare.factors(t + purge_at + 1000))
    kept, purged = worlds
    assert kept.keys() == purged.keys()
    assert all(kept[u] == pytest.approx(purged[u], rel=1e-9) for u in kept)
