"""How far a follower (`vipu logs -f`) has read a job's log, for every kind that logs (programs, training)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogMark:
    """How far a follower (`vipu logs -f`) has read a job's log: which run, the bytes of a program's output file
    read (to the end of a whole line, or of the last whole character for a partial follow), the step reports,
    whether the lines that open and close the run were read, and whether the last line shown is still open.
    Why offsets and counts, not lines: a program's output is only ever read from its file, whose last MiB `vipu
    logs` shows, so a count of lines shown would not say where to go on; and step reports only grow."""

    run: int = 0
    offset: int | None = 0  # None: from the last MiB's first whole line (a follow's first read)
    steps: int = 0
    opened: bool = False
    closed: bool = False
    mid_line: bool = False  # the read that gave it ended in the middle of a line (a partial follow)


def read_from(mark: LogMark | None, run: int, job_id: int) -> tuple[list[str], LogMark]:
    """Where a follower with `mark` reads the job's run number `run` from: its mark, or the run's start if the mark
    is of an earlier run (said in a line) or there is none (a first read: offset None, the last MiB)."""
    if mark is not None and mark.run == run:
        return [], mark
    said = [f"(run {run} of job {job_id} started)"] if mark is not None and mark.run else []
    return said, LogMark(run=run, offset=0 if mark is not None else None)
