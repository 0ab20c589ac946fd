"""scancel's filters (-u, -n, -t, -p, -q, -A): which jobs a cancel may touch.

Why they narrow and never add: `scancel -u bob 45` cancels job 45 only if bob owns it, and `scancel -t PD 26` only
the pending tasks of array 26. Each filter given must match (any of its values); a filter not given matches every
job. Pure: the caller picks the jobs, this only says which of them match, and how one that does not differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from vipu.errors import InvalidArgument
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import ACTIVE, JobState


@dataclass(frozen=True)
class JobFilter:
    users: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    states: frozenset[JobState] = frozenset()
    allocations: frozenset[str] = frozenset()  # Slurm's partition: the V-IPU allocation a job runs in
    qos: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        ended = sorted(s.value for s in self.states if s not in ACTIVE)
        if ended:
            raise InvalidArgument(f"state {', '.join(ended)}: only active jobs can be cancelled or signalled; give"
                                  " PENDING (PD) or RUNNING (R)")

    def __bool__(self) -> bool:
        return any(self._checks())

    def _checks(self) -> list[tuple[str, frozenset, Callable[[Job], object]]]:
        return self._given

    @cached_property
    def _given(self) -> list[tuple[str, frozenset, Callable[[Job], object]]]:
        """(what, values, the job's value) of each filter given; built once (a mass cancel checks 50,000 jobs)."""
        fields: list[tuple[str, frozenset, Callable[[Job], object]]] = [
            ("user", self.users, lambda j: j.user),
            ("name", self.names, lambda j: j.name),
            ("state", self.states, lambda j: j.state),
            ("partition", self.allocations, lambda j: j.spec.allocation or DEFAULT_ALLOCATION),
            ("qos", self.qos, lambda j: j.spec.qos),
            ("account", self.accounts, lambda j: j.account),
        ]
        return [check for check in fields if check[1]]

    def matches(self, job: Job) -> bool:
        return all(value(job) in values for _, values, value in self._checks())

    def mismatch(self, job: Job) -> str:
        """How the job differs from the filters, e.g. "its user is carol, not bob" ("" if it matches)."""
        for what, values, value in self._checks():
            have = value(job)
            if have not in values:
                shown = getattr(have, "value", have)
                wanted = " or ".join(sorted(getattr(v, "value", v) for v in values))
                return f"its {what} is {shown if shown is not None else '(none)'}, not {wanted}"
        return ""

    def described(self) -> str:
        """The filters given, as a message names them: "user bob, state PENDING"."""
        return ", ".join(f"{what} {' or '.join(sorted(getattr(v, 'value', v) for v in values))}"
                         for what, values, _ in self._checks())


NO_FILTER = JobFilter()
