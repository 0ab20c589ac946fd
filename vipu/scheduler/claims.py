"""Preemptors that wait for their victims' teardown: a start on a preempted job's IPUs happens only once that
job's run has let go of them.

Why: a run whose stop takes time (a user's program given its grace to end, as Slurm's KillWait) keeps its
partition until it reports its end. Slurm keeps the preemptor pending until the preempted jobs' nodes are free,
then starts it on them. Here the cycle decides as if every stop were immediate (a replay's stops are, and its
decisions stay the same); when the executor says a victim's stop goes on, the driver hands the start back
(`postpone`): the job is pending again with its old record, out of the walk, and the IPUs it was given stay
claimed for it, so no other job slips onto them. The first cycle after its victims' teardown starts it there
(`start_claimed`), before the walk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from vipu.scheduler.bits import block
from vipu.scheduler.effects import StartJob
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import JobState

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler


class Claim(NamedTuple):
    start: StartJob  # the start the cycle chose: its place, and the victims it waits for (`after`)
    mask: int  # the IPUs it holds for the job


def postpone(sched: Scheduler, start: StartJob, now: float) -> bool:
    """Whether the start must wait for a victim still torn down; if so the job is pending again, as it was before
    the cycle, and its IPUs claimed. Called by the driver after the cycle's stops were carried out."""
    table = sched.table
    before = sched.offered.get(start.job_id)
    if before is None or not any(v in table.cleaning for v in start.after):
        return False
    table.claim(start.job_id, Claim(start, block(start.first_ipu, start.ipus)))
    sched._commit([before], now)  # gated while it holds the claim (table._enter)
    return True


def start_claimed(sched: Scheduler, now: float, available: int) -> list[tuple[Job, StartJob]]:
    """The claims whose victims are all torn down, each as the running record and start of its job at `now`, on
    the IPUs it was given. A claim whose job left the queue or was held is dropped; so is one whose IPUs are not
    free and healthy (failed, or taken by a partition made by hand): its job is walked as any other."""
    table = sched.table
    out = []
    for job_id, claim in list(table.claims.items()):
        if any(v in table.cleaning for v in claim.start.after):
            continue
        job = table.jobs.get(job_id)
        mine = claim.mask
        if job is None or job.state is not JobState.PENDING or job.held or mine & ~available & sched.full_mask \
                or mine & sched.failed_mask:
            queued = table.claim_ended(job_id)
            if queued is not None:
                sched.order.add(queued, now)
            continue
        table.claim_ended(job_id)
        spec = job.spec
        out.append((job, claim.start._replace(start_time=now, end_by=now + spec.time_limit, after=())))
    return out
