"""`vipu logs`: what a job's workload logged, whole, or for a follower (`vipu logs -f`) from its mark on.

Why the job is read before its log: a follower stops once the job has ended and a read brings nothing, its mark
closed, so the lines read after a state that says it has ended must be all that is left but what the run's mark
says is still to come (a training run's summary, its thread not back yet); read the other way round, a program's
final lines written between the two reads would never be shown.

Why the follower asks again rather than the controller streaming to it: a stream would keep one of the controller's
few RPC threads (--rpc-threads, 3 by default) for the job's whole run, so three followers would stop every other
call; and a program writes its output straight to its file, of which the controller hears nothing, so a stream
would have to look at the file again and again all the same. Each ask is one short call that reads the job from
memory and the file from the follower's offset (vipu/cli/job_output.py waits between asks, longer while nothing
comes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from vipu.jobs.log_mark import LogMark  # (the edges take it from here: vipu/server/job_convert.py)
from vipu.scheduler.job_record import Job

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane


class Logs(NamedTuple):
    lines: list[str]
    record: object  # the latest run's record, whole reads only (None: it never ran, or a follow)
    mark: LogMark | None  # a follow's next mark
    job: Job  # as it was before the lines were read


def read_logs(plane: ControlPlane, job: Job, follow: bool, after: LogMark | None, partial: bool = False) -> Logs:
    """`job`'s log: whole, or with `follow` the lines after `after` (None: as far back as a whole read goes), with
    `partial` the line a program is still writing too (the mark says whether the last line is open)."""
    runner = plane.runners.get(job.spec.workload.kind)
    if runner is None:  # sleep and hold log nothing
        return Logs([], None, LogMark(closed=True) if follow else None, job)
    if follow:
        lines, mark = runner.log_after(job.id, after, partial)
        return Logs(lines, None, mark, job)
    return Logs(runner.log_lines(job.id), runner.record(job.id), None, job)
