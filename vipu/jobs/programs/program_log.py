"""`vipu logs -f` of a program: its output file read on from a byte offset, in whole lines, and the steps it
reported through vipu.sdk since the last read.

Why from the file: a program writes its output straight to its file (--output), never through the controller, so
the file is the only record of it; and why whole lines: the program may be halfway through writing the next one.
Once its run has ended nothing more comes, so the last line is read even without its newline. A requeued job's
next run starts its file afresh (sbatch's --open-mode truncate) or adds to it (append): a follower of the run before
reads the next from the start of the file, or on from where it was.
"""

from __future__ import annotations

from dataclasses import replace

from vipu.jobs.log_mark import LogMark, read_from
from vipu.jobs.programs.hosts import TAIL_BYTES
from vipu.jobs.train.results import step_line
from vipu.jobs.train.run_history import earlier_lines


def earlier(runs, job_id: int, run: int) -> list[str]:
    """How each run before `run` ended (a requeued job's), as `vipu logs` says it above the current run's output."""
    job = runs.ctx.job(job_id)
    return earlier_lines(job, run) if job is not None and run > 1 else []


def log_after(runs, job_id: int, mark: LogMark | None, partial: bool = False) -> tuple[list[str], LogMark]:
    """ProgramRuns.log_after (vipu/control/workloads.py Runner): `runs` is the ProgramRuns. `partial`: the output's
    text as far as it has come; its last item is then the line not ended yet ("" if none: dropped here)."""
    lines, at, (start, end) = _after(runs, job_id, mark, partial)
    if not partial:
        return lines, at
    was_open = mark is not None and mark.mid_line
    ends_open = end > start and lines[end - 1] != "" and end == len(lines)
    if end > start and lines[end - 1] == "":
        del lines[end - 1]
    # the reply goes on with the open line if it starts with the output's text from where the last stopped (an
    # offset back: the file was cut, and read from its start)
    goes_on = start == 0 and end > 0 and (at.offset or 0) >= (mark.offset or 0 if mark else 0)
    if was_open and lines and not goes_on:  # the line the last reply left open ends first
        lines.insert(0, "")
    return lines, replace(at, mid_line=ends_open or (was_open and not lines))


def _after(runs, job_id: int, mark: LogMark | None, partial: bool) -> tuple[list[str], LogMark, tuple[int, int]]:
    """log_after's lines and next mark, and where in the lines the output's text is (start, end)."""
    record = runs.record(job_id)
    if record is None:
        return [], LogMark(closed=True), (0, 0)  # (nothing to read until it runs: a run resets the mark)
    lines, at = read_from(mark, record.run, job_id)
    lines = earlier(runs, job_id, record.run) + lines if mark is None else lines  # (a first read)
    job = runs.ctx.job(job_id)
    appends = job is not None and job.spec.workload.open_mode == "append"
    if appends and mark is not None and mark.run and mark.run != record.run:
        at = replace(at, offset=mark.offset)  # the new run adds to the file read so far: on from there
    run = runs.runs.get(job_id)
    going = run is not None and run.record.run == record.run and not run.finished.is_set()
    if record.failure is not None:  # its output was never opened by this run: what is there is not its own
        said = [] if at.opened else [f"run {record.run} could not start: {record.failure}"]
        return lines + said, replace(at, offset=at.offset or 0, opened=True, closed=True), (0, 0)
    try:  # read as the job's user's account (--secure), as log_lines does
        user = runs.ctx.run_as(job.user if job is not None else "")
    except Exception as e:  # noqa: BLE001 - its user's mapping went: nobody may read it for them
        problem, read, offset = f"(the output of run {record.run} is not shown: {getattr(e, 'message', e)})", [], \
            at.offset or 0
    else:
        host = run.host if run is not None and run.host is not None else runs.local
        try:
            read, offset, problem = runs._call(host, "read_after", record.output, at.offset, TAIL_BYTES, user, going,
                                               partial)
        except Exception as e:  # noqa: BLE001 - a node gone: say so, keep the rest
            read, offset = [], at.offset or 0
            problem = f"(the output of run {record.run} on node {record.node} cannot be read: {e})"
    if not at.opened:
        lines += [problem] if problem else []
        if record.error is not None and record.error != record.output:  # (not shown, said where)
            lines.append(f"(its stderr goes to {record.error}, not shown here)")
    text = (len(lines), len(lines) + len(read))
    lines += read
    new = min(record.steps_reported - at.steps, len(record.steps))
    lines += [step_line(r) for r in record.steps[len(record.steps) - new:]] if new > 0 else []
    done = not going and len(read) == 0  # (a read that came back full may have more behind it)
    if done and not at.closed:
        lines += record.usage_lines()
    return lines, LogMark(record.run, offset, record.steps_reported, True, at.closed or done), text
