"""Undoing changes the store could not write: the controller's memory rebuilt from what the database holds.

Why rebuild instead of undoing change by change: a change reaches many places (the queue's indexes, the Pod's
partitions, request ids, the driver's timers), and the start already builds all of them from the records
(startup.py). Built the same way, the memory after a rollback is what a restart would find, without the restart.
The records come from the store's copy of what the database holds (store_copy.py): on a stalled disk a read of
the database blocks too.

What runs goes on: a job the database holds as running whose run goes on here keeps it; so does one whose run
ended by itself (a program exited) and whose end was not written: its end is recorded once the store writes
(run_ends.py), never made a NODE_FAIL and a rerun. A run the database does not
know (its start was not written) is stopped. A job the database holds as running whose run stopped here (its cancel
was not written) is treated as a restart treats it: resumed if its kind can resume (sleep, hold), else ended
NODE_FAIL and requeued as its spec allows. The loop starts nothing while the store cannot write (realtime.py), and
clients' changes are refused before they begin (lock.py), so only the change that met the failure can have begun a
run's end.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from vipu.control.creations import KINDS as CREATION_KINDS, Creations
from vipu.control.lifecycle import LifecycleLog, log_undone
from vipu.control.queue_rebuild import recover_jobs
from vipu.partition.controller import Controller
from vipu.partition.pod_state import KINDS as PARTITION_KINDS
from vipu.scheduler.effects import StopJob
from vipu.scheduler.job_record import KINDS as JOB_KINDS
from vipu.scheduler.job_states import JobState
from vipu.scheduler.scheduler import Scheduler

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

log = logging.getLogger("vipu.recovery")
ROLLBACK = "the undoing of changes the state store could not write"  # in the notes of the jobs it resumed or ended


def roll_back(plane: ControlPlane) -> None:
    """If the store dropped writes, the memory as the database holds it (the caller holds no lock)."""
    with plane.lock.undoing():
        if not plane.store.discard():
            return  # nothing dropped, or undone already by another thread
        old = plane.scheduler
        ran = {i: old.table.jobs[i].start_time for i in old.table.running}
        records = plane.store.load({**PARTITION_KINDS, **JOB_KINDS, **CREATION_KINDS})
        log_undone(old.table.jobs, {r.id: r for k, r in records if k == "job"})
        # what the database holds already: no events for it
        journal = LifecycleLog(plane.store, records, plane.pod.machine.ipus)
        controller = Controller(plane.pod, journal, plane.now, [(k, r) for k, r in records if k in PARTITION_KINDS])
        scheduler = Scheduler(plane.pod, old.config, journal)
        scheduler.recall, scheduler.table.quarantined = old.recall, old.table.quarantined
        plane.use(controller, scheduler, Creations(plane.store, [r for k, r in records if k in CREATION_KINDS]))
        kept = []  # runs that ended by themselves, their ends not written: recorded once the store writes

        def goes_on(job) -> bool:
            end = plane.ends.unwritten(job.id, job.start_time)
            if end is not None:
                kept.append(end)
            return end is not None or ran.get(job.id) == job.start_time

        # while the disk stays full, a rollback follows each retry (every second): said once an outage, not a line
        # a running job a second
        said, plane.undone_in = plane.undone_in == plane.store.outages, plane.store.outages
        if plane.unrecovered is not None:  # before the start's recovery (startup.recover_stored): it comes later
            plane.unrecovered = [(k, r) for k, r in records if k in JOB_KINDS]
        else:
            recover_jobs(plane, [(k, r) for k, r in records if k in JOB_KINDS], goes_on=goes_on, say=not said,
                         event=ROLLBACK,
                         lost_why="its run stopped for a change the state store could not write (undone since)")
        plane.ends.rolled_back(kept)
        scheduler.retired_qos |= old.retired_qos
        for job_id, started in sorted(ran.items()):
            if scheduler.table.running_since(job_id, started) is None:
                _stop(plane, old.table.jobs[job_id])
    if not said:
        log.warning("the state store %s could not be written (%s): changes since its last write are undone, the"
                    " state is as it holds it (said once until it writes again)", plane.store.path, plane.store.cause)


def _stop(plane: ControlPlane, job) -> None:
    """A run whose start was not written: stopped (its partition is not in the rebuilt state either)."""
    runner = plane.runners.get(job.spec.workload.kind)
    if runner is not None:  # no partition to free once its program has ended: the rebuilt state has none, and
        # slurm_<id> may by then be the partition of the job's next start
        runner.stop(StopJob(job.id, "", JobState.NODE_FAIL, False))
    log.warning("job %s: its run stopped, its start could not be written", job.display_id)
