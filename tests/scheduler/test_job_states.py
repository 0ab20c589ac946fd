"""The job transition table: every legal edge is allowed and every other one is refused with a message."""

import pytest

from vipu.errors import FailedPrecondition
from vipu.scheduler.job_record import EndedRun, Job
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import ACTIVE, REQUEUABLE, SHORT, TERMINAL, TRANSITIONS, JobState, check_transition

S = JobState
LEGAL = [(a, b) for a, edges in TRANSITIONS.items() for b in edges]
ILLEGAL = [(a, b) for a in JobState for b in JobState if b not in TRANSITIONS[a]]


@pytest.mark.parametrize("current,new", LEGAL, ids=[f"{a.value}->{b.value}" for a, b in LEGAL])
def test_legal_transition(current, new):
    check_transition(7, current, new)  # does not raise
    job = Job.trusted(id=7, name="j", user="u", spec=JobSpec(name="j", ipus=4, time_limit=60, qos="normal"),
                      state=current, submit_time=0.0)
    moved = job.moved(new, 5.0)
    ends_a_run = current in (S.RUNNING, S.COMPLETING) and new not in (S.RUNNING, S.COMPLETING)
    assert moved.state is new and moved.history[-1] == (new, 5.0, EndedRun(None, 0, None) if ends_a_run else None)
    assert job.state is current  # records are immutable: the move made a new one


@pytest.mark.parametrize("current,new", ILLEGAL, ids=[f"{a.value}->{b.value}" for a, b in ILLEGAL])
def test_illegal_transition(current, new):
    with pytest.raises(FailedPrecondition) as e:
        check_transition(7, current, new)
    assert f"job 7 is {current.value} and cannot become {new.value}" in e.value.message


def test_every_edge_has_a_comment_and_every_state_a_short_code():
    assert all(comment for edges in TRANSITIONS.values() for comment in edges.values())
    assert set(SHORT) == set(JobState)
    assert sorted(SHORT.values()) == sorted(["PD", "R", "CG", "CD", "F", "CA", "TO", "PR", "NF", "RQ"])


@pytest.mark.parametrize("state", [S.PREEMPTED, S.NODE_FAIL, S.FAILED, S.TIMEOUT, S.COMPLETED, S.RUNNING])
def test_requeue_keeps_the_id_from(state):
    assert state in REQUEUABLE


def test_a_running_job_requeued_ends_its_run_requeued_then_waits():
    """sacct --duplicates shows such a run as REQUEUED: the history keeps that state, as it keeps NODE_FAIL."""
    job = Job.trusted(id=7, name="j", user="u", spec=JobSpec(name="j", ipus=4, time_limit=60, qos="normal"),
                      state=S.RUNNING, submit_time=0.0, start_time=2.0, history=[(S.PENDING, 0.0), (S.RUNNING, 2.0)])
    again = job.requeued(5.0)
    assert again.state is S.PENDING and again.requeue_count == 1 and again.start_time is None
    assert again.history[-2:] == [(S.REQUEUED, 5.0, EndedRun(None, 0, None)), (S.PENDING, 5.0, None)]
    assert S.PENDING not in TRANSITIONS[S.RUNNING]  # never straight back: the run's end is recorded first


def test_cancelled_is_final_and_states_partition():
    assert TRANSITIONS[S.CANCELLED] == {}
    assert ACTIVE | TERMINAL == set(JobState) and not ACTIVE & TERMINAL
