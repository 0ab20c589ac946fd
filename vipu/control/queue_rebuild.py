"""The queue rebuilt from the stored job records at a start, or from what the database holds after a rollback.

Jobs that were running when the last process died keep running if their partition survived and their workload kind
can resume (sleep and hold: their timers resume against the original start, so they end when they would have);
the others, training runs and programs included, end NODE_FAIL and are requeued under the same id if their spec
allows (vipu/scheduler/recovery.py), at the end their runner says was recorded where they ran, if it was. Each says
which in its recovery note.
"""

from __future__ import annotations

import gc
import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING

from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

log = logging.getLogger("vipu.recovery")


def recover_stored(plane: ControlPlane) -> None:
    """The queue rebuilt from the job records open_plane loaded (recover_jobs). Why apart from open_plane: with Ray,
    the runs that ended while no controller heard may have left their ends on other nodes, which only a connected
    controller can ask (jobs/programs/run_nodes.py), so vipu-server calls it once Ray is connected, before it
    serves."""
    ran = [r for k, r in plane.unrecovered or () if k == "job" and r.state is JobState.RUNNING]
    for kind, runner in plane.runners.items():  # what they ask of other nodes, asked without the lock
        if hasattr(runner, "ask_ends"):
            runner.ask_ends([job for job in ran if job.spec.workload.kind == kind])
    with plane.lock, cycle_collection_paused():
        records, plane.unrecovered = plane.unrecovered, None  # (a rollback meanwhile may have loaded them again)
        if records is not None:
            recover_jobs(plane, records)


def recover_jobs(plane: ControlPlane, job_records, goes_on=lambda job: False, say: bool = True, **notes) -> None:
    """The queue from the job records, running jobs resumed or ended (module docstring). A rollback's
    (rollback.py): `goes_on(job)`, its run is still going in this process; `say`, log each running job's note;
    `notes`, Scheduler.recover's wording."""
    scheduler, controller, driver = plane.scheduler, plane.controller, plane.driver
    now = plane.now()

    def resumable(job) -> bool:
        kind = plane.kinds.get(job.spec.workload.kind)
        return goes_on(job) or (kind is not None and kind.resumable)

    def recorded_end(job):
        runner = plane.runners.get(job.spec.workload.kind)
        return runner.recorded_end(job) if hasattr(runner, "recorded_end") else None

    effects = scheduler.recover(job_records, now, list(controller.state.partitions), resumable=resumable,
                                recorded_end=recorded_end, **notes)
    driver.apply(effects, now)
    failed = sorted(controller.state.failed_ipus)
    driver.apply(scheduler.fail_ipus(failed, now, "out of service when the controller restarted"), now)
    driver.watch(lambda job: job.spec.workload.ending(job.start_time))  # resumed runs: their ends, time limits
    ran = sorted(r.id for k, r in job_records if k == "job" and r.state in (JobState.RUNNING, JobState.COMPLETING))
    for job_id in ran:
        job = scheduler.table.jobs[job_id]
        if job.recovery and say:  # (a COMPLETING job whose partition survived has none)
            log.info("job %s: %s", job.display_id, job.recovery)


@contextmanager
def cycle_collection_paused():
    """Python's cycle collector off for a block that makes many lasting objects and no cycles. Why: it runs every
    700 new objects and, as they survive, rescans all of them, which was most of a restart over tens of thousands of
    stored jobs (bench/bench_recovery.py --jobs 28000)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
