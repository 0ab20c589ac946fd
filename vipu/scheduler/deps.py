"""Slurm job dependencies: the `--dependency` syntax and whether one is met, still waiting, or can never be met.

Why "never" is its own answer: a job whose afterok target failed would otherwise wait forever looking like any
other pending job; Slurm shows DependencyNeverSatisfied so the user knows to cancel or resubmit it. The answer is
recomputed every cycle, so a target that is requeued turns "never" back into "wait".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Literal

Status = Literal["ok", "wait", "never"]
KINDS = ("after", "afterany", "afterok", "afternotok", "singleton")
HELP = ("use e.g. afterok:12, afterok:12_3 (task 3 of array job 12), afterany:3:4,afterok:5 (',' = all of),"
        " afterok:1?afterok:2 ('?' = any of) or singleton")
REF = re.compile(r"([0-9]+)(?:_([0-9]+|\*))?")  # N_* is N: every task, as Slurm shows a whole array

# A job named in a dependency: a job id (for an array job's id: every task), or (array job id, task id) for one
# task, written N_T as squeue shows it
Ref = int | tuple[int, int]


@dataclass(frozen=True)
class Clause:
    kind: str
    ids: tuple[Ref, ...] = ()


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
        kind, _, rest = part.strip().partition(":")
        kind = kind.lower()
        if _ref(kind) is not None:  # Slurm's old form, bare job ids: afterany
            kind, rest = "afterany", part.strip()
        if kind not in KINDS:
            raise DependencySyntaxError(f"{part.strip()!r}: unknown dependency type {kind!r}; " + HELP)
        if kind == "singleton":
            if rest:
                raise DependencySyntaxError(f"{part.strip()!r}: singleton takes no job ids; " + HELP)
            clauses.append(Clause(kind))
            continue
        refs = [_ref(i) for i in rest.split(":")] if rest else []
        if not refs or None in refs:
            raise DependencySyntaxError(f"{part.strip()!r}: give one or more job ids after {kind}:, e.g. {kind}:12 or"
                                        f" {kind}:12_3 for task 3 of array job 12")
        clauses.append(Clause(kind, tuple(refs)))
    return Dependency(tuple(clauses), any_of)


TERMINAL_OK = "COMPLETED"


def _one(kind: str, state: str, started: bool, terminal: bool) -> Status:
    if kind == "after":
        return "ok" if started or terminal else "wait"
    if not terminal:
        return "wait"
    if kind == "afterany":
        return "ok"
    if kind == "afterok":
        return "ok" if state == TERMINAL_OK else "never"
    return "never" if state == TERMINAL_OK else "ok"  # afternotok


def _not_ok(tasks: list[tuple[str, bool, bool]]) -> Status:
    """afternotok on a job, or on an array job's tasks together: met once every one has ended and one of them did
    not complete; never if all completed (regression: an array needed every task to fail)."""
    if not all(terminal for _, _, terminal in tasks):
        return "wait"
    return "ok" if any(state != TERMINAL_OK for state, _, _ in tasks) else "never"


def _all(statuses: Iterable[Status]) -> Status:
    result: Status = "ok"
    for s in statuses:
        if s == "never":
            return "never"
        if s == "wait":
            result = "wait"
    return result


def _any(statuses: Iterable[Status]) -> Status:
    result: Status = "never"
    for s in statuses:
        if s == "ok":
            return "ok"
        if s == "wait":
            result = "wait"
    return result


def evaluate(
    dep: Dependency,
    targets: Callable[[Ref], Iterable[tuple[str, bool, bool]]],
    singleton_clear: Callable[[], bool],
) -> Status:
    """Combine the clauses; `targets(ref)` yields (state, ever_started, terminal) for a job id, for every task of
    an array when it is an array job id, or for one task when it is (array job id, task id); `singleton_clear()`
    says no earlier job of the same name and user is still active."""

    def clause(c: Clause) -> Status:
        if c.kind == "singleton":
            return "ok" if singleton_clear() else "wait"
        if c.kind == "afternotok":  # per job named: an array's tasks together, as slurmctld tests an array
            return _all(_not_ok(list(targets(i))) for i in c.ids)
        return _all(_one(c.kind, *t) for i in c.ids for t in targets(i))

    statuses = (clause(c) for c in dep.clauses)
    return _any(statuses) if dep.any_of else _all(statuses)


SHOWN = {"wait": "unfulfilled", "never": "failed"}


def unmet(
    dep: Dependency,
    targets: Callable[[Ref], Iterable[tuple[str, bool, bool]]],
    singleton_clear: Callable[[], bool],
    is_array: Callable[[int], bool],
) -> str:
    """The dependency as squeue %E and scontrol's Dependency= show it (slurmctld's _depend_list2str): one element
    per job named, each with its state, the met ones left out; "" once it is met as a whole (any element of a '?'
    list, or every one of a ',' list), as Slurm then flushes the list. `is_array(N)`: N is an array job's id,
    shown N_*."""
    shown = []
    for c in dep.clauses:
        if c.kind == "singleton":
            if not singleton_clear():
                shown.append(f"singleton({SHOWN['wait']})")
            elif dep.any_of:
                return ""
            continue
        for ref in c.ids:
            tasks = list(targets(ref))
            status = _not_ok(tasks) if c.kind == "afternotok" else _all(_one(c.kind, *t) for t in tasks)
            if status == "ok":
                if dep.any_of:
                    return ""
                continue
            named = f"{ref[0]}_{ref[1]}" if isinstance(ref, tuple) else f"{ref}_*" if is_array(ref) else str(ref)
            shown.append(f"{c.kind}:{named}({SHOWN[status]})")
    return ("?" if dep.any_of else ",").join(shown)
