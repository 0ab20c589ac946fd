"""scancel's filters narrow: a job named is cancelled only if it matches every filter, an array only its matching
tasks, and without ids the filters choose among the active jobs the caller sees."""

from __future__ import annotations

import pytest

from vipu.errors import FailedPrecondition, InvalidArgument, NotFound
from vipu.scheduler.job_filter import NO_FILTER, JobFilter
from vipu.scheduler.job_states import JobState as S

from tests.scheduler.builders import make, spec


def queue():
    """carol's job 1 and task 0 of bob's array 2-4 run (8 IPUs each, a full Pod16); bob's array tasks 3 and 4,
    his job 5 (named x, account physics) and 6 (qos low, allocation a1) wait."""
    s = make()
    s.submit(spec(ipus=8, user="carol", workload={"kind": "hold"}), 0)
    s.submit(spec(ipus=8, user="bob", array="0-2", workload={"kind": "hold"}), 0)
    s.cycle(0)
    s.submit(spec(ipus=16, user="bob", name="x", account="physics"), 0)
    s.submit(spec(ipus=16, user="bob", qos="low", allocation="a1"), 0)
    s.cycle(0)
    assert [s.job(i).state for i in range(1, 7)] == [S.RUNNING, S.RUNNING] + [S.PENDING] * 4
    return s


@pytest.mark.parametrize("match, ids", [
    (JobFilter(users=frozenset({"bob"})), [2, 3, 4, 5, 6]),
    (JobFilter(users=frozenset({"bob"}), states=frozenset({S.PENDING})), [3, 4, 5, 6]),
    (JobFilter(names=frozenset({"x"})), [5]),
    (JobFilter(qos=frozenset({"low"})), [6]),
    (JobFilter(allocations=frozenset({"a1"})), [6]),
    (JobFilter(allocations=frozenset({"default"})), [1, 2, 3, 4, 5]),  # a job naming none runs in default
    (JobFilter(accounts=frozenset({"physics"})), [5]),
    (JobFilter(states=frozenset({S.RUNNING}), users=frozenset({"bob", "carol"})), [1, 2]),
])
def test_filters_alone_choose_every_active_job_that_matches_all_of_them(match, ids):
    assert queue().matching(match, visible=lambda user: True) == ids


def test_without_ids_the_filters_choose_only_among_the_jobs_the_caller_sees():
    assert queue().matching(JobFilter(states=frozenset({S.RUNNING})), visible=lambda user: user == "bob") == [2]


def test_a_job_named_that_another_user_owns_is_not_cancelled_by_a_user_filter():
    """Regression: `vipu cancel -u bob 1` cancelled carol's job 1 and every job of bob's; scancel cancels job 1 only
    if bob owns it."""
    s = queue()
    with pytest.raises(NotFound, match=r"job 1 does not match user bob \(its user is carol, not bob\)"):
        s.cancel([1], 10, match=JobFilter(users=frozenset({"bob"})))
    assert [s.job(i).state for i in range(1, 7)] == [S.RUNNING, S.RUNNING] + [S.PENDING] * 4
    s.cancel([5], 10, match=JobFilter(users=frozenset({"bob"})))
    assert [s.job(i).state for i in (1, 5, 6)] == [S.RUNNING, S.CANCELLED, S.PENDING]


def test_an_array_named_with_a_state_filter_loses_only_its_tasks_in_that_state():
    s = queue()
    s.cancel([2], 10, match=JobFilter(states=frozenset({S.PENDING})))
    assert [s.job(i).state for i in (2, 3, 4)] == [S.RUNNING, S.CANCELLED, S.CANCELLED]
    with pytest.raises(NotFound, match="array job 2 has no active task that matches state PENDING"):
        s.cancel([2], 20, match=JobFilter(states=frozenset({S.PENDING})))


def test_one_job_that_does_not_match_leaves_every_job_named_as_it_was():
    s = queue()
    with pytest.raises(NotFound, match="job 5 does not match qos low"):
        s.cancel([6, 5], 10, match=JobFilter(qos=frozenset({"low"})))
    assert [s.job(i).state for i in (5, 6)] == [S.PENDING, S.PENDING]


def test_a_job_that_ended_is_still_said_to_have_ended_whatever_the_filters():
    s = queue()
    s.cancel([5], 10)
    with pytest.raises(FailedPrecondition, match=r"job 5 already ended \(CANCELLED\)"):
        s.cancel([5], 20, match=JobFilter(users=frozenset({"carol"})))


def test_ended_states_are_no_filter_for_a_cancel():
    with pytest.raises(InvalidArgument, match=r"state COMPLETED: only active jobs .* give PENDING \(PD\) or RUNNING"):
        JobFilter(states=frozenset({S.COMPLETED}))


def test_no_filter_matches_everything_and_is_false():
    s = queue()
    assert not NO_FILTER and JobFilter(names=frozenset({"x"}))
    assert s.matching(NO_FILTER, visible=lambda user: True) == [1, 2, 3, 4, 5, 6]
    assert JobFilter(users=frozenset({"bob"}), states=frozenset({S.PENDING})).described() == "user bob, state PENDING"
