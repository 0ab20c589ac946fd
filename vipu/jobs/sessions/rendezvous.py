"""Where the instances of a program meet for a collective: each brings its members' contributions, the last to
arrive runs the collective once, and every one of them gets the result.

Why: poprun starts several instances of a program, each driving the IPUs of its own replicas, and a collective
across replicas needs every member IPU's data before it can move any. Meetings are keyed by what the instances
agree on (the operation, the tensor, the groups and the call's sequence number in each instance), so calls made in
the same order meet whatever the order they arrive in. A member that never comes is named when the wait times
out, not left as a hang (users of real Pods complained of host-sync timeouts that named no IPU).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

from vipu.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument, VipuError


@dataclass(eq=False)
class _Meeting:
    expected: frozenset
    contributions: dict = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: BaseException | None = None


class Rendezvous:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._meetings: dict[Hashable, _Meeting] = {}
        self._closed: str | None = None

    def meet(self, key: Hashable, expected: frozenset, contribution: Mapping, run: Callable[[dict], object],
             timeout_s: float, what: str):
        """Add `contribution` (member -> value) to the meeting `key` of the members `expected`; the caller that
        completes it calls run(every contribution) and all callers get its result (or its error). `what` names
        the meeting in errors ("allreduce 'grads' #3")."""
        with self._lock:
            if self._closed is not None:
                raise FailedPrecondition(self._closed)
            meeting = self._meetings.setdefault(key, _Meeting(expected))
            if meeting.expected != expected:
                raise InvalidArgument(f"{what}: this call's members {_names(expected)} differ from those another"
                                      f" instance gave, {_names(meeting.expected)}; every instance must name the"
                                      " same group")
            stray = sorted(set(contribution) - expected)
            twice = sorted(set(contribution) & set(meeting.contributions))
            if stray or twice:
                raise InvalidArgument(f"{what}: {_names(stray or twice)} "
                                      f"{'are not members' if stray else 'contributed already'}; each member"
                                      " contributes once, from the instance that drives it")
            meeting.contributions.update(contribution)
            last = set(meeting.contributions) == expected
            if last:
                del self._meetings[key]
        if last:
            try:
                meeting.result = run(meeting.contributions)
            except BaseException as e:  # noqa: BLE001 - every member gets the error
                meeting.error = e
            meeting.done.set()
        elif not meeting.done.wait(timeout_s):
            with self._lock:
                if not meeting.done.is_set():
                    missing = sorted(expected - set(meeting.contributions))
                    meeting.error = DeadlineExceeded(
                        f"{what}: {_names(missing)} did not arrive within {timeout_s:g} s; every instance must"
                        " make the same calls in the same order (or give a longer timeout)")
                    self._meetings.pop(key, None)
                    meeting.done.set()
        if meeting.error is not None:
            error = meeting.error  # each caller raises its own copy: they unwind in threads of their own
            raise type(error)(error.message) if isinstance(error, VipuError) else error
        return meeting.result

    def close(self, why: str) -> None:
        """No more meetings: those waiting now, and every later call, fail with FailedPrecondition(why)."""
        with self._lock:
            self._closed = why
            meetings, self._meetings = list(self._meetings.values()), {}
        for meeting in meetings:
            meeting.error = FailedPrecondition(why)
            meeting.done.set()


def _names(members) -> str:
    members = sorted(members)
    if members and isinstance(members[0], tuple):  # ("instance", 1)
        return ", ".join(f"{kind} {n}" for kind, n in members)
    return f"IPU{'s' if len(members) != 1 else ''} {', '.join(map(str, members))}"
