"""Holds (scontrol hold and release): a flag on a PENDING job, not a state. A user hold (JobHeldUser) leaves an
admin hold as it is; an admin hold (JobHeldAdmin, Slurm's hold by an operator) replaces a user hold, and only an
admin may release it. An array job's id stands for its pending tasks unless `single`. Pure: what changes, for
Scheduler to commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.errors import FailedPrecondition, PermissionDenied
from vipu.scheduler.arrays import spans
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

PENDING = JobState.PENDING


def check_release(s: Scheduler, job_id: int, admin: bool, single: bool) -> None:
    """PermissionDenied if a non-admin's release of this job (or array) would have to lift an admin hold."""
    if admin:
        return
    locked = [j for j in s._expand([job_id], single) if j.admin_hold and j.state is PENDING]
    if locked:
        which = f"job {locked[0].display_id}"
        if s._whole_array(job_id, single):
            tasks = spans([j.array_task_id for j in locked])  # type: ignore[misc]
            which = f"array job {job_id} (task{'s' if len(locked) > 1 else ''} {tasks})"
        raise PermissionDenied(f"{which} is held by an admin (JobHeldAdmin); only an admin may release it: ask one"
                               " to run `vipu release`", reason="ADMIN_REQUIRED")


def changed(s: Scheduler, job_id: int, held: bool, admin: bool, single: bool, now: float) -> list[Job]:
    """The new records of the jobs a hold (`held`) or release of `job_id` at `now` changes; `admin`: placed by, or
    released by, an admin. A held job has no eligible time; a released one is eligible from now if nothing else
    holds it back."""
    verb = "held" if held else "released"
    jobs = s._expand([job_id], single)
    if s._whole_array(job_id, single):  # like scontrol: the tasks that are still pending
        jobs = [j for j in jobs if j.state is PENDING]
        if not jobs:
            raise FailedPrecondition(f"array job {job_id} has no PENDING tasks to be {verb}")
    elif jobs[0].state is not PENDING:
        raise FailedPrecondition(f"job {jobs[0].display_id} is {jobs[0].state.value}; only a PENDING job can be {verb}")
    if held:  # an admin hold replaces a user hold; a user hold never weakens an admin hold
        changes = {"held": True, "admin_hold": True} if admin else {"held": True}
        changes["eligible_time"] = None  # (scontrol's EligibleTime=Unknown)
        return [j.model_copy(update=changes) for j in jobs if not j.held or (admin and not j.admin_hold)]
    check_release(s, job_id, admin, single)
    met = s.table.deps_met
    return [j.model_copy(update={"held": False, "admin_hold": False}).with_eligibility(j.id in met, now)
            for j in jobs if j.held]
