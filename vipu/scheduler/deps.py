"""Slurm job dependencies: the `--dependency` syntax and whether one is met, still waiting, or can never be met.

Why "never" is its own answer: a job whose afterok target failed would otherwise wait forever looking like any
other pending job; Slurm shows DependencyNeverSatisfied so the user knows to cancel or resubmit it. The answer is
recomputed every cycle, so a target that is requeued turns "never" back into "wait".

Why a wait may carry a time (Verdict.at): `after:ID+MINUTES` is met by time alone once its targets have started, so
the scheduler wakes then instead of waiting for an event; `now` is the caller's (the scheduler's clock), never read
here, so a replay in virtual time waits as a live controller does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Literal, NamedTuple

Status = Literal["ok", "wait", "never"]
KINDS = ("after", "afterany", "aftercorr", "afterok", "afternotok", "singleton")
HELP = ("use e.g. afterok:12, afterok:12_3 (task 3 of array job 12), afterany:3:4,afterok:5 (',' = all of),"
        " afterok:1?afterok:2 ('?' = any of), after:12+5 (5 minutes after job 12 started), aftercorr:12 (each"
        " task after the same task of array job 12 completed) or singleton")
REF = re.compile(r"([0-9]+)(?:_([0-9]+|\*))?")  # N_* is N: every task, as Slurm shows a whole array
MAX_DELAY_MINUTES = 366 * 24 * 60  # a year, as for a begin time: anything longer is a typo

# A job named in a dependency: a job id (for an array job's id: every task), or (array job id, task id) for one
# task, written N_T as squeue shows it
Ref = int | tuple[int, int]


@dataclass(frozen=True)
class Clause:
    kind: str
    ids: tuple[Ref, ...] = ()
    delays: tuple[int, ...] = ()  # after's +MINUTES, one per id (0: none); () when no id has one

    def delay(self, k: int) -> int:
        """The minutes `after` waits past the start of the k-th id (0: none)."""
        return self.delays[k] if self.delays else 0


@dataclass(frozen=True)
class Dependency:
    clauses: tuple[Clause, ...]
    any_of: bool  # True when the clauses were joined by '?'

    @property
    def ids(self) -> set[int]:
        """The jobs and array jobs named (an N_T names array job N)."""
        return {r if isinstance(r, int) else r[0] for c in self.clauses for r in c.ids}

    @property
    def tasks(self) -> set[tuple[int, int]]:
        """The (array job id, task id) of every N_T named."""
        return {r for c in self.clauses for r in c.ids if not isinstance(r, int)}


def _ref(text: str) -> Ref | None:
    m = REF.fullmatch(text)
    if m is None:
        return None
    return int(m.group(1)) if m.group(2) in (None, "*") else (int(m.group(1)), int(m.group(2)))


class DependencySyntaxError(ValueError):
    pass


def _delay(part: str, kind: str, ref_text: str, minutes: str) -> int:
    """The +MINUTES of `ref_text+minutes` in clause `part`, as slurmctld reads it: whole minutes above 0, and only
    for after. Why refused on the other kinds, which Slurm parses and then ignores: a delay that does nothing would
    let a user believe the job waits."""
    if kind != "after":
        given, minutes = f"+{minutes}" if minutes else "the +", minutes or "MINUTES"
        unit = "minute" if minutes.lstrip("0") == "1" else "minutes"
        raise DependencySyntaxError(f"{part!r}: only after takes a delay (+MINUTES); write after:{ref_text}+{minutes}"
                                    f" to start {minutes} {unit} after job {ref_text} starts, or drop {given}")
    if not minutes:
        raise DependencySyntaxError(f"{part!r}: give the delay in whole minutes after the +, e.g. after:{ref_text}+5")
    if not minutes.isascii() or not minutes.isdigit():
        raise DependencySyntaxError(f"{part!r}: the delay {minutes!r} is not a whole number of minutes; write e.g."
                                    f" after:{ref_text}+5 for 5 minutes")
    if len(minutes.lstrip("0")) > len(str(MAX_DELAY_MINUTES)) or int(minutes) > MAX_DELAY_MINUTES:
        shown = minutes if len(minutes) <= 12 else f"{minutes[:12]}..."
        raise DependencySyntaxError(f"{part[:40]!r}: a delay of {shown} minutes is more than a year; give at most"
                                    f" {MAX_DELAY_MINUTES}")
    if int(minutes) <= 0:
        raise DependencySyntaxError(f"{part!r}: a delay must be at least 1 minute; write after:{ref_text} for none")
    return int(minutes)


@lru_cache(maxsize=4096)
def parse_dependency(text: str) -> Dependency:
    text = text.strip()
    if not text:
        raise DependencySyntaxError("is empty; " + HELP)
    if "," in text and "?" in text:
        raise DependencySyntaxError(f"{text!r} mixes ',' and '?'; Slurm allows only one of them per job; " + HELP)
    any_of = "?" in text
    clauses = []
    for part in re.split(r"[,?]", text):
        part = part.strip()
        kind, _, rest = part.partition(":")
        kind = kind.lower()
        if _ref(kind) is not None:  # Slurm's old form, bare job ids: afterany
            kind, rest = "afterany", part
        if kind not in KINDS:
            raise DependencySyntaxError(f"{part!r}: unknown dependency type {kind!r}; " + HELP)
        if kind == "singleton":
            if rest:
                raise DependencySyntaxError(f"{part!r}: singleton takes no job ids; " + HELP)
            clauses.append(Clause(kind))
            continue
        refs, delays = [], []
        for item in rest.split(":") if rest else []:
            ref_text, plus, minutes = item.partition("+")
            refs.append(_ref(ref_text))
            delays.append(_delay(part, kind, ref_text, minutes.strip()) if plus and refs[-1] is not None else 0)
        if not refs or None in refs:
            raise DependencySyntaxError(f"{part!r}: give one or more job ids after {kind}:, e.g. {kind}:12 or"
                                        f" {kind}:12_3 for task 3 of array job 12")
        if kind == "aftercorr" and any(isinstance(r, tuple) for r in refs):
            task = next(r for r in refs if isinstance(r, tuple))
            raise DependencySyntaxError(
                f"{part!r}: aftercorr pairs each task with the task of the same index itself; name the array job"
                f" (aftercorr:{task[0]}), or use afterok:{task[0]}_{task[1]} to wait for that one task")
        clauses.append(Clause(kind, tuple(refs), tuple(delays) if any(delays) else ()))
    return Dependency(tuple(clauses), any_of)


TERMINAL_OK = "COMPLETED"


class Target(NamedTuple):
    """A job a dependency names, as it reads it."""

    state: str
    since: float | None  # when its latest run started, or ended if it never ran since it was queued (None: neither
    # yet, or queued again): after's clock
    terminal: bool


class Verdict(NamedTuple):
    status: Status
    at: float | None = None  # a wait that time alone ends (after:ID+MINUTES): when; None: it waits for an event


OK, WAIT, NEVER = Verdict("ok"), Verdict("wait"), Verdict("never")


class Reads(NamedTuple):
    """What a dependency reads of the queue (dependency_reads.py builds it)."""

    targets: Callable[[Ref], Iterable[Target]]  # a job; every task of an array job id; one task for (N, T)
    singleton_clear: Callable[[], bool]  # no earlier job of the same name and user is still active
    peer: Callable[[int], Ref]  # aftercorr's target for this job: the same task of array N, else N itself
    now: float  # the scheduler's clock


def _after(t: Target, delay: int, now: float) -> Verdict:
    """after:ID[+MINUTES]: met once the job started (or ended without running, as a cancelled one does) that
    long ago, as slurmctld's start_time + depend_time <= now."""
    if t.since is None:
        return WAIT
    at = t.since + delay * 60
    return OK if at <= now else Verdict("wait", at)


def _ended(kind: str, t: Target) -> Verdict:
    if not t.terminal:
        return WAIT
    if kind == "afterany":
        return OK
    return OK if t.state == TERMINAL_OK else NEVER  # afterok, and aftercorr on its peer


def _not_ok(tasks: list[Target]) -> Verdict:
    """afternotok on a job, or on an array job's tasks together: met once every one has ended and one of them did
    not complete; never if all completed (regression: an array needed every task to fail)."""
    if not all(t.terminal for t in tasks):
        return WAIT
    return OK if any(t.state != TERMINAL_OK for t in tasks) else NEVER


def _all(verdicts: list[Verdict]) -> Verdict:
    """Every one met; a wait ends by time alone only if each wait does, at the latest of their times."""
    if len(verdicts) == 1:  # (most dependencies name one job)
        return verdicts[0]
    waiting, at = False, -math.inf
    for v in verdicts:
        if v.status == "never":
            return NEVER
        if v.status == "wait":
            waiting = True
            at = math.inf if v.at is None else max(at, v.at)
    return Verdict("wait", None if at == math.inf else at) if waiting else OK


def _any(verdicts: list[Verdict]) -> Verdict:
    """One met is enough; a wait ends by time at the earliest time one of them does."""
    waiting, at = False, math.inf
    for v in verdicts:
        if v.status == "ok":
            return OK
        if v.status == "wait":
            waiting = True
            if v.at is not None:
                at = min(at, v.at)
    return Verdict("wait", None if at == math.inf else at) if waiting else NEVER


def _element(c: Clause, k: int, reads: Reads) -> Verdict:
    """One job named by a clause (its k-th id)."""
    ref, kind = c.ids[k], c.kind
    if kind == "afternotok":  # per job named: an array's tasks together, as slurmctld tests an array
        return _not_ok(list(reads.targets(ref)))
    if kind == "after":
        delay, now = c.delay(k), reads.now
        return _all([_after(t, delay, now) for t in reads.targets(ref)])
    if kind == "aftercorr":
        ref, kind = reads.peer(ref), "afterok"  # type: ignore[arg-type]  (aftercorr names array jobs only)
    return _all([_ended(kind, t) for t in reads.targets(ref)])


def _clause(c: Clause, reads: Reads) -> list[Verdict]:
    if c.kind == "singleton":
        return [OK if reads.singleton_clear() else WAIT]
    return [_element(c, k, reads) for k in range(len(c.ids))]


def evaluate(dep: Dependency, reads: Reads) -> Verdict:
    """Combine the clauses: ',' all of them, '?' any of them. (Lists, not nested generators: cheaper for the one or
    two jobs a dependency usually names, and a restart evaluates every waiting job at once.)"""
    if dep.any_of:
        return _any([_all(_clause(c, reads)) for c in dep.clauses])
    return _all([v for c in dep.clauses for v in _clause(c, reads)])


SHOWN = {"wait": "unfulfilled", "never": "failed"}


def unmet(dep: Dependency, reads: Reads, is_array: Callable[[int], bool]) -> str:
    """The dependency as squeue %E and scontrol's Dependency= show it (slurmctld's _depend_list2str): one element
    per job named, each with its state and after's +MINUTES, the met ones left out; "" once it is met as a whole
    (any element of a '?' list, or every one of a ',' list), as Slurm then flushes the list. `is_array(N)`: N is an
    array job's id, shown N_*."""
    shown = []
    for c in dep.clauses:
        if c.kind == "singleton":
            if not reads.singleton_clear():
                shown.append(f"singleton({SHOWN['wait']})")
            elif dep.any_of:
                return ""
            continue
        for k, ref in enumerate(c.ids):
            status = _element(c, k, reads).status
            if status == "ok":
                if dep.any_of:
                    return ""
                continue
            named = f"{ref[0]}_{ref[1]}" if isinstance(ref, tuple) else f"{ref}_*" if is_array(ref) else str(ref)
            delay = f"+{c.delay(k)}" if c.delay(k) else ""
            shown.append(f"{c.kind}:{named}{delay}({SHOWN[status]})")
    return ("?" if dep.any_of else ",").join(shown)
