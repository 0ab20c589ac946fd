"""The one interface every policy implements: `schedule(ScheduleRequest) -> ScheduleDecision`.

Why a snapshot in and a decision out: a policy never touches live state, so it can be replayed, tested with a
table of cases and swapped by name; the Scheduler applies the decision (commit first, then memory) and the caller
carries out the effects. Reasons are documented by what they cause, as in squeue's NODELIST(REASON) column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Literal, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:
    from vipu.scheduler.config import QosSpec

# Pending reasons (Slurm's names) and what each one means for the job.
RESOURCES = "Resources"  # first in line; waits for IPUs to free up (its estimated start is a reservation)
PRIORITY = "Priority"  # a higher-priority job is waiting ahead of it
DEPENDENCY = "Dependency"  # waits for the jobs it depends on
NEVER = "DependencyNeverSatisfied"  # can never start as written: cancel it or requeue its target
HELD = "JobHeldUser"  # held by its user (or `vipu hold` without --admin); `vipu release` lets it run
HELD_ADMIN = "JobHeldAdmin"  # held by an admin (`vipu hold --admin`); only an admin's `vipu release` lets it run
CLEANING = "Cleaning"  # requeued while its last run is still being torn down (its program still ending)
BEGIN_TIME = "BeginTime"  # its begin time (sbatch --begin) has not come; its estimated start is that time
ARRAY_LIMIT = "JobArrayTaskLimit"  # its array already runs %N tasks
NODE_NOT_AVAIL = "ReqNodeNotAvail"  # even an empty Pod cannot hold it now: IPUs it needs are failed or drained
PARTITION_LIMIT = "PartitionNodeLimit"  # larger than its allocation could ever hold, failed and drained IPUs included
QOS_USER_JOBS = "QOSMaxJobsPerUserLimit"
QOS_USER_IPUS = "QOSMaxIpusPerUserLimit"
QOS_ACCOUNT_JOBS = "QOSMaxJobsPerAccount"
QOS_GRP_JOBS = "QOSGrpJobsLimit"
QOS_GRP_IPUS = "QOSGrpIpusLimit"


# The records below are NamedTuples: immutable, and ten times cheaper to build than frozen dataclasses, which
# matters for objects made once per job start in a replay of thousands of jobs per second.
# new_record(Cls, (every field, in order)) builds one without the NamedTuple's own __new__, a Python function: a
# frame per record, for the records a cycle makes at each of two thousand starts.
new_record = tuple.__new__


class QueuedJob(NamedTuple):
    """What a policy needs to know about a pending job (built once per job, not per cycle)."""

    id: int
    ipus: int
    time_limit: float
    submit_time: float
    user: str
    qos: str
    nice: int = 0
    array_job_id: int | None = None
    array_limit: int | None = None
    allocation: str | None = None
    fixed_priority: int | None = None  # an admin's (scontrol update Priority=N), in place of the multifactor one
    account: str | None = None
    nodes: int | None = None  # the IPUs its nodelist and exclude let it use (node_requests.py); None: any


class RunningJob(NamedTuple):
    id: int
    ipus: int
    first_ipu: int
    start_time: float
    end_by: float  # start + time limit: when its IPUs are free at the latest
    user: str
    qos: str
    array_job_id: int | None = None
    account: str | None = None


@dataclass(slots=True)
class ScheduleRequest:
    """A snapshot; policies only read it."""

    now: float
    total_ipus: int
    available_mask: int  # free, healthy IPUs a job may be placed on now
    pending: Iterable[QueuedJob]  # eligible jobs only (not held, begun, dependencies met), in the policy's ORDER; may be lazy
    running: Sequence[RunningJob]
    qos: Mapping[str, "QosSpec"]
    healthy_mask: int | None = None  # IPUs that are not failed; None: all
    allowed_masks: Mapping[str, int] | None = None  # allocation -> its IPUs; None: every job may use the whole Pod
    max_job_test: int = 100
    # Optional hints that let the walk stop early (None: walk every job): how many eligible jobs of each size wait,
    # how many of them are in a QOS that may preempt, and (lower bounds are fine) their shortest time limits.
    sizes: Mapping[int, int] | None = None
    preemptors: Mapping[int, int] | None = None  # size -> waiting jobs of that size in a QOS that may preempt
    shortest: Mapping[int, float] | None = None  # size -> the shortest time limit of a waiting job of that size
    estimates: bool = True  # False: skip estimated starts nobody will read (trace replay); starts are unchanged,
    # reasons may be coarser (a cycle in which nothing can start does not walk the queue at all)
    running_mask: int | None = None  # the IPUs of `running` (a hint: the caller keeps it; None: computed from them)
    # `running`'s blocks by end_by, flat (first IPU, IPUs, ...), and their mask (a hint: JobTable.release_groups)
    releases: Mapping[float, tuple[list[int], int]] | None = None
    # (free by, first IPU, IPUs) of stopped runs still torn down (Slurm's completing jobs): busy now, not in
    # `running` nor in available_mask, free by then at the latest (the end of their KillWait)
    teardowns: Sequence[tuple[float, int, int]] = ()


class Start(NamedTuple):
    job_id: int
    first_ipu: int
    place_mask: int  # the mask the block was chosen from: place(place_mask, total, ipus) == first_ipu


class Preemption(NamedTuple):
    job_id: int
    by_job_id: int
    mode: Literal["requeue", "cancel"]


class PendingInfo(NamedTuple):
    reason: str
    estimated_start: float | None = None


@dataclass
class ScheduleDecision:
    starts: list[Start] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)  # carried out before the starts
    pending: dict[int, PendingInfo] = field(default_factory=dict)
    # a waiting job's first IPU at its estimated start, where it has one: sbatch --test-only names its nodes
    expected_first_ipu: dict[int, int] = field(default_factory=dict)
    # When the walk stopped early (nothing more could start), the jobs it did not reach are not in `pending`:
    # each waits for `rest` unless `limits.reason(job)` names a limit. Explained lazily, on query.
    rest: PendingInfo | None = None
    limits: object | None = None  # a policies.limits.Usage, as the cycle left it

    def explain(self, job: QueuedJob) -> PendingInfo | None:
        info = self.pending.get(job.id)
        if info is not None or self.rest is None:
            return info
        reason = self.limits.reason(job) if self.limits is not None else None  # type: ignore[attr-defined]
        return PendingInfo(reason) if reason else self.rest


Policy = Callable[[ScheduleRequest], ScheduleDecision]


@dataclass(frozen=True)
class QosSets:
    limited: frozenset[str]  # QOS with a job or IPU limit: running jobs must be counted
    preempting: frozenset[str]  # QOS whose jobs may evict others
    priority: dict[str, int]


_QOS_SETS: dict[int, tuple[Mapping, QosSets]] = {}


def qos_sets(qos: Mapping[str, "QosSpec"]) -> QosSets:
    """Derived views of a QOS table, computed once per table rather than once per cycle."""
    hit = _QOS_SETS.get(id(qos))
    if hit is not None and hit[0] is qos:
        return hit[1]
    sets = QosSets(
        limited=frozenset(name for name, q in qos.items() if q.limited),
        preempting=frozenset(name for name, q in qos.items() if q.preempt),
        priority={name: q.priority for name, q in qos.items()},
    )
    if len(_QOS_SETS) >= 16:
        _QOS_SETS.pop(next(iter(_QOS_SETS)))
    _QOS_SETS[id(qos)] = (qos, sets)  # holding the table keeps its id from being reused
    return sets
