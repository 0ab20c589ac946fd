"""scontrol update job on the live controller: who may, the change committed, and a running job's new time limit
handed to the driver, which ends the run at it (TIMEOUT) or no longer at the old one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.access import Identity
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState
from vipu.scheduler.node_requests import UPDATE_FIELDS, check_nodes_in_allocation
from vipu.scheduler.updates import JobUpdate, node_changes

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane


def update_job(plane: ControlPlane, job_id: int, update: JobUpdate, single: bool, identity: Identity) -> list[Job]:
    """Change the job's fields (vipu/scheduler/updates.py): a user only their own jobs, an admin every job (without
    --secure every caller is one). Returns the jobs changed, or the job as it is if nothing changed."""
    with plane.lock.changing():
        scheduler = plane.scheduler
        identity.check_owner("job", str(job_id), scheduler.table.get(job_id).user)
        now = plane.now()
        nodes = node_changes(update)
        if nodes:  # as submit's -w/-x: machines of the job's allocation, or it would wait forever
            for job in scheduler.table.expand([job_id], single):
                if job.state is JobState.PENDING:
                    check_nodes_in_allocation(job.spec.model_copy(update=nodes), scheduler.table.nodes,
                                              plane.controller.state, UPDATE_FIELDS)
        changed = scheduler.update(job_id, update, now, identity.admin, single)
        for job in changed:
            if job.state is JobState.RUNNING:
                plane.driver.limit_changed(job.id, now)
        jobs = [scheduler.job(job.id, now) for job in changed] or [scheduler.job(job_id, now)]
    if changed:
        plane.changed()
    return jobs
