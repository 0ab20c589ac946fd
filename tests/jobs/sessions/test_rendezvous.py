"""Instances meet for a collective: it runs once, when the last member has come, and every caller gets the
result; a member that never comes is named when the wait times out; a closed rendezvous releases its waiters."""

from __future__ import annotations

import threading

import pytest

from vipu.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument
from vipu.jobs.sessions.rendezvous import Rendezvous


def in_threads(*calls):
    out, threads = [None] * len(calls), []
    for i, call in enumerate(calls):
        def run(i=i, call=call):
            try:
                out[i] = call()
            except Exception as e:  # noqa: BLE001 - the test reads it
                out[i] = e
        threads.append(threading.Thread(target=run))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return out


def test_the_last_member_runs_it_once_and_everyone_gets_the_result():
    meeting, runs = Rendezvous(), []

    def run(contributions):
        runs.append(dict(contributions))
        return sum(contributions.values())

    got = in_threads(lambda: meeting.meet("k", frozenset({0, 1, 2, 3}), {0: 1, 1: 2}, run, 5, "allreduce #0"),
                     lambda: meeting.meet("k", frozenset({0, 1, 2, 3}), {2: 3}, run, 5, "allreduce #0"),
                     lambda: meeting.meet("k", frozenset({0, 1, 2, 3}), {3: 4}, run, 5, "allreduce #0"))
    assert got == [10, 10, 10] and runs == [{0: 1, 1: 2, 2: 3, 3: 4}]


def test_a_member_that_never_comes_is_named_when_the_wait_times_out():
    with pytest.raises(DeadlineExceeded) as late:
        Rendezvous().meet("k", frozenset({0, 1, 2}), {0: 1}, sum, 0.2, "allreduce 'grads' #3")
    assert "allreduce 'grads' #3: IPUs 1, 2 did not arrive within 0.2 s" in late.value.message


def test_disagreeing_members_and_a_second_contribution_are_refused():
    meeting, ended = Rendezvous(), []
    waiting = threading.Thread(target=lambda: ended.append(in_threads(
        lambda: meeting.meet("k", frozenset({0, 1}), {0: 1}, sum, 2, "x"))[0]))
    waiting.start()
    threading.Event().wait(0.2)
    with pytest.raises(InvalidArgument, match="differ from those another instance gave"):
        meeting.meet("k", frozenset({0, 1, 2}), {1: 1}, sum, 1, "x")
    with pytest.raises(InvalidArgument, match="IPU 0 contributed already"):
        meeting.meet("k", frozenset({0, 1}), {0: 1}, sum, 1, "x")
    meeting.close("the run ended")
    waiting.join(timeout=5)
    assert isinstance(ended[0], FailedPrecondition)


def test_closing_releases_the_waiters_with_the_reason():
    meeting = Rendezvous()
    got = []
    t = threading.Thread(target=lambda: got.append(in_threads(
        lambda: meeting.meet(("step", 0), frozenset({("instance", 0), ("instance", 1)}), {("instance", 0): 1},
                             sum, 30, "report of step 0"))[0]))
    t.start()
    threading.Event().wait(0.2)
    meeting.close("job 7 was cancelled")
    t.join(timeout=5)
    assert isinstance(got[0], FailedPrecondition) and got[0].message == "job 7 was cancelled"
    with pytest.raises(FailedPrecondition):
        meeting.meet("later", frozenset({0}), {0: 1}, sum, 1, "x")
