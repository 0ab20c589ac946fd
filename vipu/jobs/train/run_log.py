"""What `vipu logs` prints of a training job, whole (`log_lines`) or from a follower's mark on (`log_after`, `vipu
logs -f`): the lines that open a run (how earlier runs ended, the poprun environment), one line per step, and the
lines that close it (its summary, its failure, or what ended it).

Why in three parts: a follower reads the opening once, the steps by count as they come (step reports only grow),
and the closing once the run's thread is back, which may be after its job has ended (cancelled mid-step), so the
mark is closed only then; `vipu logs` prints the three together.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from vipu.jobs.log_mark import LogMark, read_from
from vipu.jobs.train.poprun import summary_lines
from vipu.jobs.train.run_history import result_lines, span
from vipu.jobs.train.results import StepReport, modelled_line, step_line


class RunLog(NamedTuple):
    run: int
    opening: list[str]
    steps: Sequence[StepReport]
    closing: list[str]  # none while the run goes
    final: bool  # its thread is back: nothing more comes of this run


def run_log(runs, job_id: int) -> RunLog | None:
    """The job's latest run's log in its three parts (`runs`: the TrainRuns), or None if it never ran."""
    record = runs.record(job_id)
    if record is None:
        return None
    instances = record.result.instances if record.result else []
    job = runs.ctx.job(job_id)
    first = [modelled_line(record.modelled, job.spec.workload.steps if job else None)] if record.modelled else []
    opening = [*first, *record.earlier_runs, *summary_lines(
        record.environment, [f"-> ran replicas {span(r.replicas)} on IPUs {span(r.ipus)}" for r in instances])]
    run = runs.runs.get(job_id)
    if run is not None and not run.done:  # live, even while an earlier run's thread is still winding down
        ended = job is not None and not runs._still_running(job_id, run.started)  # ended under it, thread not back
        closing = [line for line in [runs._ending(job, run.number, None)] if line] if ended else []
        return RunLog(record.run, opening, record.reports, closing, False)
    closing = []
    if record.error:
        closing.append(f"training failed: {record.error}")
    elif record.ended:
        closing.append(record.ended)
    elif record.result is None and job is not None:  # its end was never recorded: the controller stopped under it
        closing += [line for line in [runs._ending(job, record.run, record)] if line]
    if record.result:
        closing += result_lines(record.result)
    return RunLog(record.run, opening, record.reports, closing, True)


def log_lines(runs, job_id: int) -> list[str]:
    """TrainRuns.log_lines: the whole log of the latest run so far."""
    log = run_log(runs, job_id)
    return [] if log is None else [*log.opening, *map(step_line, log.steps), *log.closing]


def log_after(runs, job_id: int, mark: LogMark | None, partial: bool = False) -> tuple[list[str], LogMark]:
    """TrainRuns.log_after (vipu/control/workloads.py Runner): the lines after `mark`, and the next mark. Its lines
    are whole as written, so `partial` changes nothing."""
    log = run_log(runs, job_id)
    if log is None:
        return [], LogMark(closed=True)  # (nothing to read until it runs: a run resets the mark)
    lines, at = read_from(mark, log.run, job_id)
    if not at.opened:
        lines += log.opening
    lines += map(step_line, log.steps[at.steps:])
    if log.final and not at.closed:  # (a job ended under its run: its summary comes once the thread is back)
        lines += log.closing
    return lines, LogMark(log.run, 0, len(log.steps), True, at.closed or log.final)
