"""A researcher's own policy: a Python file defining `schedule(request) -> decision` and its queue ORDER, as the
built-in policies do (backfill.py), loaded by `vipu simulate --policy-file` and `vipu-server --policy-file`.

Why it is checked at load and guarded on every cycle: the very code evaluated in replay is meant to run a live queue,
where a bug must not take the controller down or start a job on IPUs another job holds. A file that does not load
(a syntax error, an exception, no schedule, the wrong signature, an unknown ORDER, a first call on an empty Pod that
fails) is refused with its file and line. On a cycle where it raises, or decides something the snapshot does not
allow (a job it was not shown, IPUs that are not free, two starts on one block), the cycle runs the configured
built-in policy instead, over the same queue, and the failure is counted and logged with its file and line. A replay
(`vipu simulate`) has no queue to keep going: it stops at the first failure instead (stop_at_failure), since figures
partly decided by the built-in policy would be no policy's.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import traceback
import types
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from vipu.clock import VirtualClock
from vipu.errors import InvalidArgument
from vipu.scheduler.bits import block
from vipu.scheduler.policies.base import Policy, QueuedJob, ScheduleDecision, ScheduleRequest, Start

ORDERS = ("priority", "submit", "shortest")  # vipu/scheduler/order.py
log = logging.getLogger("vipu.policy")
HOW = "write `def schedule(request):` returning a ScheduleDecision (docs/traces.md, Your own policy)"


@dataclass(frozen=True)
class PolicyFile:
    path: str
    name: str  # the file's stem: how logs and replays call it (a replay of two x.py names each by its path)
    schedule: Policy
    order: str


_LOADED: dict[tuple[str, int, int], PolicyFile] = {}


def load_policy_file(path: str | Path) -> PolicyFile:
    """The policy in the file at `path` (loaded once per version of the file), or InvalidArgument naming its line."""
    file = Path(path).resolve()
    try:
        stat = file.stat()
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgument(f"--policy-file {path}: cannot read it ({e}); give a Python file defining"
                              " schedule(request)") from None
    key = (str(file), stat.st_mtime_ns, stat.st_size)
    if key not in _LOADED:
        _LOADED[key] = _load(str(file), text, str(path))
    return _LOADED[key]


def _load(file: str, text: str, shown: str) -> PolicyFile:
    try:
        code = compile(text, file, "exec")
    except SyntaxError as e:
        raise InvalidArgument(f"--policy-file {shown}:{e.lineno}: SyntaxError: {e.msg}; fix the file") from None
    module = types.ModuleType(f"vipu_policy_{Path(file).stem}")
    module.__file__ = file
    try:
        exec(code, module.__dict__)
    except Exception as e:  # noqa: BLE001 - any error of the user's module is refused with its line
        raise InvalidArgument(f"--policy-file {shown}:{_line(e, file)}: {type(e).__name__}: {e} (while loading it);"
                              " fix the file") from None
    schedule = getattr(module, "schedule", None)
    if schedule is None:  # nowhere to point: the file's end is where one would go
        raise InvalidArgument(f"--policy-file {shown}:{text.count(chr(10)) + 1}: defines no schedule function; {HOW}")
    if not callable(schedule):
        raise InvalidArgument(f"--policy-file {shown}:{_assigned(text, 'schedule')}: schedule is not a function (it"
                              f" is {type(schedule).__name__}); {HOW}")
    try:
        inspect.signature(schedule).bind(object())
    except TypeError:
        line = getattr(getattr(schedule, "__code__", None), "co_firstlineno", "?")
        raise InvalidArgument(f"--policy-file {shown}:{line}: schedule{inspect.signature(schedule)} does not take"
                              f" one argument, the request; {HOW}") from None
    order = getattr(module, "ORDER", "priority")
    if order not in ORDERS:
        raise InvalidArgument(f"--policy-file {shown}:{_assigned(text, 'ORDER')}: ORDER is {order!r}; give one of"
                              f" {', '.join(ORDERS)} (the order request.pending comes in)")
    loaded = PolicyFile(file, Path(file).stem, schedule, order)
    _probe(loaded, shown)
    return loaded


def _probe(loaded: PolicyFile, shown: str) -> None:
    """One call on an empty Pod of 16 IPUs with nothing queued: a policy that fails even there is refused now."""
    request = ScheduleRequest(now=0.0, total_ipus=16, available_mask=(1 << 16) - 1, pending=iter(()), running=[],
                              qos={}, healthy_mask=(1 << 16) - 1)
    try:
        decision = loaded.schedule(request)
    except Exception as e:  # noqa: BLE001
        raise InvalidArgument(f"--policy-file {shown}:{_line(e, loaded.path)}: {type(e).__name__}: {e} (when called"
                              " on an empty Pod with no jobs); fix the file") from None
    if not isinstance(decision, ScheduleDecision):
        line = getattr(getattr(loaded.schedule, "__code__", None), "co_firstlineno", "?")
        raise InvalidArgument(f"--policy-file {shown}:{line}: schedule() returned {type(decision).__name__}, not a"
                              f" ScheduleDecision; {HOW}")


def _line(error: BaseException, file: str) -> object:
    """The line of `file` in the error's traceback nearest the error (the call into vipu code it made, if the error
    was raised there)."""
    if isinstance(error, SyntaxError) and error.filename == file:
        return error.lineno
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == file]
    return frames[-1].lineno if frames else "?"


def _assigned(text: str, name: str) -> object:
    for n, line in enumerate(text.splitlines(), 1):
        if line.replace(" ", "").startswith(f"{name}="):
            return n
    return "?"


class PolicyFailed(InvalidArgument):
    """A policy file failed a cycle of a replay, which stops there."""


class BadDecision(Exception):
    """The decision asks for something the snapshot does not allow."""


class GuardedPolicy:
    """The file's schedule, checked on every cycle; `fallback` (a built-in policy) decides a cycle it fails."""

    def __init__(self, loaded: PolicyFile, fallback: Policy, fallback_name: str):
        self.loaded = loaded
        self.fallback = fallback
        self.fallback_name = fallback_name
        self.failures = 0  # cycles the fallback decided
        self.first_failure: str | None = None  # "FILE:LINE: Error: message (at time T)"
        self.shown: Callable[[float], str] = VirtualClock.shown  # T: a replay's seconds; the live controller's ISO
        self.stop_at_failure = False  # True: a failure raises PolicyFailed instead of running the fallback (replay)
        self.calls = 0

    def __call__(self, request: ScheduleRequest) -> ScheduleDecision:
        shown: dict[int, QueuedJob] = {}
        self.calls += 1
        mine, spare = itertools.tee(request.pending)
        try:
            decision = self.loaded.schedule(replace(request, pending=_noting(mine, shown)))
            return checked(request, decision, shown)
        except BadDecision as e:
            self._failed(f"{self.loaded.path}: its decision was refused: {e} (at time {self.shown(request.now)})")
        except Exception as e:  # noqa: BLE001 - whatever the file does wrong, this cycle still gets decided
            where = f"{self.loaded.path}:{_line(e, self.loaded.path)}"
            self._failed(f"{where}: {type(e).__name__}: {e} (at time {self.shown(request.now)})")
        return self.fallback(replace(request, pending=spare))

    def _failed(self, what: str) -> None:
        if self.stop_at_failure:
            raise PolicyFailed(f"--policy-file {self.loaded.name} failed in its call {self.calls}: {what}; fix the"
                               " file (a replay stops at a policy's first failure; a live controller would let"
                               f" {self.fallback_name} decide that cycle and go on)") from None
        self.failures += 1
        self.first_failure = self.first_failure or what
        if _worth_logging(self.failures):  # the 1st, 10th, 100th, ...: a policy failing every cycle fills no disk
            log.error("policy file %s failed (%d cycle%s so far): %s; this cycle ran %s instead", self.loaded.name,
                      self.failures, "" if self.failures == 1 else "s", what, self.fallback_name)


def _worth_logging(n: int) -> bool:
    while n % 10 == 0:
        n //= 10
    return n == 1


def _noting(jobs, shown: dict[int, QueuedJob]) -> Iterator[QueuedJob]:
    for job in jobs:
        shown[job.id] = job
        yield job


def checked(request: ScheduleRequest, decision: object, shown: dict[int, QueuedJob]) -> ScheduleDecision:
    """`decision` if the Scheduler may apply it to the snapshot `request`, with each start's place_mask set to its
    block; else BadDecision saying what is wrong."""
    if not isinstance(decision, ScheduleDecision):
        raise BadDecision(f"schedule() returned {type(decision).__name__}, not a ScheduleDecision")
    running = {r.id: r for r in request.running}
    free = request.available_mask
    if request.healthy_mask is not None:
        free &= request.healthy_mask
    for p in decision.preemptions:
        victim = running.pop(p.job_id, None)
        if victim is None or p.by_job_id not in shown or p.mode not in ("requeue", "cancel"):
            raise BadDecision(f"preemption {p} names a job that is not running (or twice), a preemptor it was not"
                              " shown, or a mode other than requeue or cancel")
        free |= block(victim.first_ipu, victim.ipus) & (-1 if request.healthy_mask is None else request.healthy_mask)
    starts, taken = [], set()
    for s in decision.starts:
        job = shown.get(s.job_id)
        if job is None or s.job_id in taken:
            raise BadDecision(f"start of job {s.job_id}: it is not a pending job the policy was shown, or starts twice")
        taken.add(s.job_id)
        blk = block(s.first_ipu, job.ipus)
        allowed = free
        if request.allowed_masks is not None:  # as the engine reads them (engine._Walk.allowed)
            allowed &= request.allowed_masks.get(job.allocation or "default", 0)
        if job.nodes is not None:  # its nodelist and exclude
            allowed &= job.nodes
        if s.first_ipu < 0 or s.first_ipu % job.ipus or s.first_ipu + job.ipus > request.total_ipus \
                or blk & ~allowed:
            raise BadDecision(f"start of job {s.job_id} ({job.ipus} IPUs) at IPU {s.first_ipu}: not an aligned block"
                              " of free IPUs it may use")
        free &= ~blk
        starts.append(Start(s.job_id, s.first_ipu, blk))
    decision.starts = starts
    return decision
