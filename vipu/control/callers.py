"""Who asked for the change being made: the RPC this thread serves, if any (its request id, method, and caller),
so the log lines of what it changes can say so (lifecycle.py, and every log line written while it runs).

Why a context variable: an RPC runs in one thread from the edge's interceptor down to the store's commit, and the
layers between (servicer, control plane, scheduler) need not pass it along. A change made by the scheduling loop,
a run's end or the controller's start has no RPC, and is the controller's own.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Callable, NamedTuple

CONTROLLER = "controller"  # who asked, when no RPC did: the scheduler, a time limit, a restart's recovery


class Call(NamedTuple):
    request_id: str
    method: str  # "vipu.v1.JobService/CancelJob"
    caller: str  # the caller's user name ("unknown" when it gave none)
    peer: Callable[[], str] = lambda: ""  # where the call came from (gRPC's "ipv4:10.0.0.7:51234")
    answer_by: float | None = None  # time.monotonic() by which the caller wants its answer (its deadline)


_serving: ContextVar[Call | None] = ContextVar("vipu_call", default=None)


def current() -> Call | None:
    return _serving.get()


class serving:  # noqa: N801 - used as the function it replaced: `with serving(call):`
    """`call` is the one this thread serves, within the block. A class, not a generator: every RPC enters one,
    and a generator's context costs several times as much."""

    __slots__ = ("call", "_token")

    def __init__(self, call: Call):
        self.call = call

    def __enter__(self) -> None:
        self._token = _serving.set(self.call)

    def __exit__(self, *exc) -> None:
        _serving.reset(self._token)


def asked_by() -> tuple[str, str | None]:
    """(who asked, the request id): the RPC's caller, or the controller itself."""
    call = _serving.get()
    return (CONTROLLER, None) if call is None else (call.caller, call.request_id)
