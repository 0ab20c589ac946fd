"""The job lifecycle: one transition table, one function that enforces it.

Why requeue goes back to PENDING with the same id (Slurm's JobRequeue): users and dependency clauses refer to jobs
by id, so a preempted or node-failed job that runs again must stay the same job; its requeue count says how often.
Holding is a flag on a PENDING job (reason JobHeldUser, or JobHeldAdmin when an admin placed it), not a state,
exactly as in Slurm; so is a begin time still to come (reason BeginTime).

COMPLETING (Slurm's CG) is entered by no record of this version: a run's end (CANCELLED, TIMEOUT, ...) is recorded
at once. A run whose program goes on ending after its stop (KillWait) keeps its IPUs until it has; meanwhile
`vipu queue` and `vipu show job` show the job COMPLETING (reasons.completing), as Slurm shows its JOB_COMPLETING
flag over the base state that sacct keeps. The state stays in this table so that records stored by an earlier
version, which did enter it, still load and finish (recovery.py).
"""

from __future__ import annotations

from enum import Enum

from vipu.errors import FailedPrecondition


class JobState(str, Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    PREEMPTED = "PREEMPTED"
    NODE_FAIL = "NODE_FAIL"
    REQUEUED = "REQUEUED"


S = JobState

SHORT = {
    S.PENDING: "PD",
    S.RUNNING: "R",
    S.COMPLETING: "CG",
    S.COMPLETED: "CD",
    S.FAILED: "F",
    S.CANCELLED: "CA",
    S.TIMEOUT: "TO",
    S.PREEMPTED: "PR",
    S.NODE_FAIL: "NF",
    S.REQUEUED: "RQ",
}

_REQUEUE = "scontrol requeue of a finished job: queued again under the same id"

TRANSITIONS: dict[JobState, dict[JobState, str]] = {
    S.PENDING: {
        S.RUNNING: "the scheduler placed its whole aligned block and started it",
        S.CANCELLED: "cancelled while it waited",
    },
    S.RUNNING: {
        S.COMPLETING: "its workload exited; its partition was being removed (earlier versions only)",
        S.COMPLETED: "its workload exited with code 0",
        S.FAILED: "its workload exited with a non-zero code",
        S.CANCELLED: "cancelled while it ran",
        S.TIMEOUT: "it ran past its time limit",
        S.PREEMPTED: "evicted by a job of a QOS allowed to preempt its QOS",
        S.NODE_FAIL: "an IPU or machine under its partition failed, or the controller stopped while it ran (its"
                     " Recovery= in `vipu show job` says so)",
        S.REQUEUED: "scontrol requeue of a running job: its run stopped, recorded as sacct shows it",
    },
    S.COMPLETING: {
        S.COMPLETED: "partition removed after an exit code of 0",
        S.FAILED: "partition removed after a non-zero exit code",
        S.CANCELLED: "cancelled while its partition was being removed",
        S.NODE_FAIL: "its partition was lost in a restart before removal finished",
    },
    S.COMPLETED: {S.PENDING: _REQUEUE},
    S.FAILED: {S.PENDING: _REQUEUE},
    S.TIMEOUT: {S.PENDING: _REQUEUE},
    S.PREEMPTED: {S.PENDING: "requeued after preemption (its QOS's preempt_mode is requeue), or by scontrol requeue"},
    S.NODE_FAIL: {S.PENDING: "requeued after a node failure (its spec allows requeue), or by scontrol requeue"},
    S.REQUEUED: {S.PENDING: "queued again under the same id, in the step that stopped its run"},
    S.CANCELLED: {},  # terminal: the user meant it; submit again instead
}

ACTIVE = frozenset({S.PENDING, S.RUNNING, S.COMPLETING})
# Each ends a run. A job never rests in REQUEUED: the step that enters it moves on to PENDING, so only a job's
# history holds it (sacct --duplicates shows that run's row).
TERMINAL = frozenset(s for s in JobState if s not in ACTIVE)
# the ends of a run stopped from outside (a cancel, its time limit, a preemption), the controller's SIGTERM first
STOPPED_RUNS = frozenset((S.CANCELLED, S.TIMEOUT, S.PREEMPTED))
# what `scontrol requeue` takes: a running job (through REQUEUED) or one whose run ended as these did
REQUEUABLE = frozenset(s for s in JobState if S.PENDING in TRANSITIONS[s] or S.REQUEUED in TRANSITIONS[s])


def check_transition(job_id: int, current: JobState, new: JobState) -> None:
    if new not in TRANSITIONS[current]:
        allowed = ", ".join(s.value for s in TRANSITIONS[current]) or "none (terminal)"
        raise FailedPrecondition(
            f"job {job_id} is {current.value} and cannot become {new.value} (allowed from {current.value}: {allowed})"
        )


def check_requeue(jobs: list) -> None:
    """scontrol requeue of these jobs (Job records): refused for a pending or unrequeuable one, and for one
    submitted with --no-requeue (Slurm's ESLURM_DISABLED, "Requested operation is presently disabled")."""
    from vipu.partition.rules import named  # here: the CLI imports this module, and rules.py brings pydantic

    for job in jobs:
        if job.state is JobState.PENDING:
            raise FailedPrecondition(f"job {job.display_id} is already PENDING; nothing to requeue")
        if job.state not in REQUEUABLE:
            raise FailedPrecondition(f"job {job.display_id} is {job.state.value} and cannot be requeued; submit it again")
    refused = [j.display_id for j in jobs if not j.spec.requeue]
    if refused:
        raise FailedPrecondition(
            f"{named('job', refused)} {'was' if len(refused) == 1 else 'were'} submitted with --no-requeue"
            " (requeue: false), so cannot be requeued; submit it again instead")
