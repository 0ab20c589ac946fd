"""Runs' own ends (a program exited, a training run finished) kept until the store has written them.

Why: the end of a run only the run could tell is not made again. A rollback rebuilds the state from the database
(rollback.py), where the job still runs; treated as a restart treats it, it ended NODE_FAIL "the controller stopped
while it ran" and was requeued, so a program that had finished ran again, its output file truncated. So an end is
kept: while the store cannot write it waits, the job RUNNING, and is recorded, with its real time and exit code,
once the store writes again; one whose write was dropped is kept by the rollback the same way.
"""

from __future__ import annotations

from typing import NamedTuple

from vipu.scheduler.job_states import JobState


class RunEnd(NamedTuple):
    job_id: int
    started: float  # the run's start: a later run of the same job is another run
    at: float  # when it ended
    exit_code: int
    state: JobState | None  # None: COMPLETED on exit code and signal 0, else FAILED
    signal: int
    records: tuple  # the runner's records of it, (kind, name, record), written with its end
    why: str | None = None  # what ended it, when not its program (the controller lost it)


class RunEnds:
    """The ends told to the scheduler and not yet known to be written (`given`), and those waiting (`held`)."""

    def __init__(self) -> None:
        self.given: dict[int, RunEnd] = {}
        self.held: dict[int, RunEnd] = {}

    def give(self, end: RunEnd) -> None:
        self.held.pop(end.job_id, None)
        self.given[end.job_id] = end

    def hold(self, end: RunEnd) -> None:
        self.given.pop(end.job_id, None)
        self.held[end.job_id] = end

    def unwritten(self, job_id: int, started: float) -> RunEnd | None:
        """The end of this run if it was given or held (a rollback: the database has the job running since
        `started`, so a given end was not written)."""
        end = self.given.get(job_id) or self.held.get(job_id)
        return end if end is not None and end.started == started else None

    def rolled_back(self, kept: list[RunEnd]) -> None:
        """After a rollback: the ends it kept wait; every other given end was written (or its job is gone)."""
        self.given.clear()
        self.held = {end.job_id: end for end in kept}

    def forget(self, job_ids) -> None:
        """Jobs moved out of memory: ended, their ends written long since."""
        for job_id in job_ids:
            self.given.pop(job_id, None)
