"""Rebuilding the scheduler from the store after a restart (slurmctld -r).

What happens to a job that was RUNNING when the old process died: its partition is the evidence. If the caller
still has the partition `slurm_<id>` (the partition records live in the same store) and its workload can resume
(`resumable`: the live server's sleep and hold workloads can, a training run held in the dead process cannot), the
job keeps running: its start and end-by times are unchanged, so its time limit still holds, and the caller
re-attaches or restarts its workload. Otherwise the job's run was lost with the process: like a Slurm job whose node
vanished it ends NODE_FAIL and, when its spec allows requeue (the default), is queued again under the same id; the
run ends when its program did, if what ran it recorded that (`recorded_end`), else at the restart. A COMPLETING job
whose partition is gone finishes with the exit code it recorded. Each of these jobs says which and why in its
`recovery` note (`vipu show job`). Partitions named slurm_<id> whose job is no longer running are returned
as StopJob effects so the caller removes them. Pending jobs simply wait again; their reasons are recomputed by the
next cycle. Holds (user or admin) and begin times are part of the job record, so a held job stays held, an admin
hold still needs an admin, and a job whose begin time passed while the controller was down is eligible at once.

A QOS that stored jobs name but the restarted controller's config no longer has (Slurm's InvalidQOS) gets a stand-in
of priority 0, so no lookup fails: running jobs of it go on, pending ones are held for an admin, with a note saying
why, and new jobs may not name it (Scheduler.retired_qos).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from pydantic import BaseModel

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.partition.rules import job_of_partition, job_partition_name
from vipu.scheduler.config import with_retired_qos
from vipu.scheduler.effects import Effect, StopJob
from vipu.scheduler.endings import charge
from vipu.scheduler.job_record import KINDS, META_NAME, Job, PurgedUsage, SchedulerMeta
from vipu.scheduler.job_states import JobState
from vipu.scheduler.workload import RunExit

if TYPE_CHECKING:
    from vipu.scheduler.scheduler import Scheduler

S = JobState


def _records(records: Iterable) -> tuple[list[Job], SchedulerMeta | None, PurgedUsage | None]:
    jobs, meta, purged = [], None, None
    for item in records:
        kind, record = (item[0], item[-1])  # (kind, record) or (kind, name, record)
        if kind not in KINDS:
            continue  # other parts of the store (partitions, agents) are not ours
        if not isinstance(record, BaseModel):
            record = KINDS[kind].model_validate(record)
        if kind == "job":
            jobs.append(record)
        elif kind == "purged_usage":
            purged = record
        else:
            meta = record
    return jobs, meta, purged


def stored_next_id(records: Iterable) -> int:
    """The next job id the stored records give: their meta's, or above their highest job's, if higher."""
    jobs, meta, _ = _records(records)
    return _next_id(jobs, meta)


def _run_end(job: Job, recorded: RunExit | None, now: float) -> RunExit | None:
    """The end of a run lost with the controller, if what ran it recorded one: its program's end, not the restart,
    as slurmstepd's report of a step's end reaches a restarted slurmctld, so the time the controller was away is not
    run time (Elapsed, End, usage). None where nothing recorded it (the program's supervisor died too, or the run
    never reached its program): the run then ends at the restart, the last moment it may have run. A record from
    before the run's start is another run's; one after `now` (another node's clock) is taken as `now`."""
    if recorded is None or job.start_time is None or recorded.at < job.start_time:
        return None
    return recorded._replace(at=min(recorded.at, now))


def _last_first_ipu(job: Job) -> int | None:
    """The first IPU of the job's last run, which its kept partition holds. Why the history's: a requeued job's own
    field is cleared (Job.requeued), and without it the teardown of its run (reason Cleaning) held no IPUs: the views
    showed them allocated, where without a restart they show completing."""
    if job.first_ipu is not None:
        return job.first_ipu
    return next((t.run.first_ipu for t in reversed(job.history) if t.run is not None), None)


def _next_id(jobs: list[Job], meta: SchedulerMeta | None) -> int:
    return max([meta.next_job_id if meta else 1] + [j.id + 1 for j in jobs])


def recover(s: Scheduler, records: Iterable, now: float, partitions: Iterable[str] | None,
            resumable: Callable[[Job], bool] | None = None, event: str = "the controller's restart",
            lost_why: str | None = None, recorded_end: Callable[[Job], RunExit | None] | None = None) -> list[Effect]:
    if s.table.jobs:
        raise FailedPrecondition("recover() rebuilds an empty scheduler; create a new Scheduler for it")
    jobs, meta, purged = _records(records)
    names = {j.spec.qos for j in jobs if j.spec.qos is not None}
    s.retired_qos = frozenset(names - set(s.config.qos))
    if s.retired_qos:
        s._configure(with_retired_qos(s.config, names))
    live = set(partitions) if partitions is not None else set()
    changed: list[Job] = []
    final: list[Job] = []
    lost: dict[int, int | None] = {}  # runs this restart ended NODE_FAIL -> the first IPU of each
    cut_short: list[Job] = []  # runs the crash ended and that went back to the queue (their end_time is cleared)
    for job in sorted(jobs, key=lambda j: j.id):
        if job.spec.time_limit is None or job.spec.qos is None:
            raise InvalidArgument(f"stored job {job.id} has no resolved time_limit/qos; the store is corrupt")
        kept = job.partition in live
        if job.state is S.COMPLETING and not kept:
            job = job.moved(S.COMPLETED if job.exit_code == 0 else S.FAILED, now, end_time=now,
                            recovery=f"finished at {event}: its workload had already exited")
            changed.append(job)
        elif job.state is S.RUNNING and kept and (resumable is None or resumable(job)):
            job = job.updated({"recovery": f"resumed after {event}: its partition {job.partition}"
                                           " survived"})
            changed.append(job)
        elif job.state is S.RUNNING:
            why = lost_why or ("its partition was lost with the controller" if not kept
                   else "its workload does not outlive the controller (a training run lives in the controller's"
                   " process; a program's supervisor stops it when the controller goes)")
            then = "requeued" if job.spec.requeue else "not requeued (its spec says requeue: false)"
            ended = _run_end(job, recorded_end(job) if recorded_end is not None else None, now)
            end = now if ended is None else ended.at
            failed = job.moved(S.NODE_FAIL, end, end_time=end,
                               ended_by=why if lost_why else f"the controller stopped while it ran: {why}",
                               recovery=f"ended NODE_FAIL at {event}, {then}: {why}"
                                        + ("" if ended is None else "; it ended when its program did, as recorded"
                                                                    " where it ran"),
                               **({} if ended is None else {"exit_code": ended.exit_code,
                                                            "exit_signal": ended.signal}))
            lost[job.id] = job.first_ipu
            job = failed.requeued(now) if job.spec.requeue else failed
            if job is not failed:
                cut_short.append(failed)
            changed.append(job)
        if job.state is S.PENDING and job.spec.qos in s.retired_qos and not job.admin_hold:
            job = job.updated({"held": True, "admin_hold": True, "recovery": (
                f"{job.recovery + '; then ' if job.recovery else ''}held (JobHeldAdmin) at {event}:"
                f" its qos {job.spec.qos} is no longer in the scheduler config; restore the QOS, or release the job"
                " (it then runs at priority 0) or cancel it")})
            if changed and changed[-1].id == job.id:  # changed above, in this same pass
                changed[-1] = job
            else:
                changed.append(job)
        final.append(job)
    next_id = max(_next_id(final, meta), s.config.first_job_id)
    puts = [("job", str(j.id), j) for j in changed] + [("scheduler_meta", META_NAME, SchedulerMeta(next_job_id=next_id))]
    s.journal.commit(puts, [])
    s._remember(final, now)
    if purged is not None:
        for user, (usage, at) in purged.usage.items():
            s.purged.charge(user, usage, at)
            s.fairshare.charge(user, usage, at)
    for job in final:
        if job.start_time is not None and job.end_time is not None:
            s.fairshare.charge(job.user, job.ipus * (job.end_time - job.start_time), job.end_time)
    for job in cut_short:
        charge(s, job, job.end_time)
    s.table.next_id = next_id
    effects: list[Effect] = []
    running = {job_partition_name(i) for i in s.table.running}
    for name in sorted(live - running):
        job_id = job_of_partition(name)
        if job_id is not None:
            known = s.table.jobs.get(job_id)
            if job_id in lost:  # a run that could not resume on the partition it kept
                effects.append(StopJob(job_id, name, S.NODE_FAIL, known.spec.requeue, lost[job_id], known.ipus))
            else:  # a run that had already ended when the process died, before its partition was removed
                effects.append(StopJob(job_id, name, known.state, False, _last_first_ipu(known), known.ipus) if known
                               else StopJob(job_id, name, S.CANCELLED, False))
    return effects
