"""When the thread that watches a program's run fails (program_runs.py): the run still ends, saying why.

Why: a controller short of memory (a program's tensors once filled it) could not start a thread to free a closed
session's tensors, the watching thread died of it, and its job stayed RUNNING after its program had exited, its
tensors never freed even after a cancel; two later jobs ran to exit 0 and stayed RUNNING too, recorded CANCELLED when
an operator ended them. Now whatever fails where a run is watched, its session is closed (its tensors freed) and
its job ends: with its program's real exit code when that is known; FAILED, saying why, when the program never
started; NODE_FAIL (requeued as its spec allows) when it had started and its end can no longer be known, after its
supervisor is told to stop it.
"""

from __future__ import annotations

import logging

from vipu.scheduler.job_states import JobState

log = logging.getLogger("vipu.programs")


def watch_failed(runs, run, error: BaseException, result: dict | None) -> None:
    """End `run` of the runner `runs` (a ProgramRuns) after `error` where it was watched; `result` is its program's
    end as its supervisor told it ({"ended": ...} or {"failed": why}), None if not known."""
    ctx = runs.ctx
    why = f"the controller could not go on watching it: {type(error).__name__}: {error}"
    log.error("job %s: run %s: %s", run.job_id, run.record.run, why, exc_info=error)
    try:
        runs._close(run, f"job {run.job_id}'s run has ended: {why}")
    except Exception:  # noqa: BLE001 - its tensors may stay; its job must still end
        log.exception("job %s: closing the session of run %s failed", run.job_id, run.record.run)
    if result is None and run.launched and run.host is not None:  # still running, as far as is known: stopped
        try:
            runs._call(run.host, "terminate", run.key, wait=False)
        except Exception:  # noqa: BLE001 - its supervisor ends it when the controller goes, at worst
            log.exception("job %s: stopping the program of run %s failed", run.job_id, run.record.run)
    ended = result.get("ended") if result is not None else None
    with ctx.lock:
        if runs._stopping:  # the controller stops its programs: the restart reads their ends (run_exits.py)
            return
        if not ctx.still_running(run.job_id, run.started):  # stopped from outside: its ExitCode is the stop's doing
            if ended is not None:
                ctx.stopped_end(run.job_id, run.started, ended["exit_code"], ended["signal"])
        elif ended is not None:
            ctx.finish(run.job_id, run.started, ended["exit_code"], None, ended["signal"],
                       records=[("program_run", run.record.name, run.record)])
        elif result is not None or not run.launched:  # its program never started
            run.record.failure = result["failed"] if result is not None else why
            ctx.finish(run.job_id, run.started, 1, JobState.FAILED,
                       records=[("program_run", run.record.name, run.record)], why=run.record.failure)
        else:
            ctx.finish(run.job_id, run.started, 1, JobState.NODE_FAIL,
                       records=[("program_run", run.record.name, run.record)], why=why)
    if ended is not None:
        try:
            runs._end_written(run)
        except Exception:  # noqa: BLE001 - the record stays until its job is purged (ProgramRuns.forget)
            log.exception("job %s: removing the exit record of run %s failed", run.job_id, run.record.run)
    ctx.wake()
