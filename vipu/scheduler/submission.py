"""Checking a spec against this Pod, its QOS table and its jobs, and expanding it into job records.

Why all of it happens before the Journal commit: a submit either stores every job of an array or none, and a
rejected spec leaves no trace, so the user fixes the named field and submits again.

Why a dependency cycle reduces to a self-reference: a dependency may only name a job that already exists, and ids
only grow, so every stored job depends on older jobs only; the one cycle a new submit can create is a job (or an
array task) naming its own id or its own array, which the user could only do by guessing the next id.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, NamedTuple

from vipu.errors import AlreadyExists, InvalidArgument, ResourceExhausted, VipuError
from vipu.hardware.pod import PodConfig
from vipu.partition.rules import check_job_title, check_name, check_size, job_partition_name, too_many_fix
from vipu.scheduler.arrays import ArraySyntaxError
from vipu.scheduler.begin import begin_time
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.durations import MAX_SECONDS, format_duration
from vipu.scheduler.job_record import Job, Transition, eligible_from
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.table import JobTable
from vipu.validation import MAX_REQUEST_ID



class Submission(NamedTuple):
    """One spec to queue; `source` (a file name) only labels its refusal among several."""

    spec: JobSpec | dict
    request_id: str | None = None
    source: str = ""
    held: bool = False  # queued held whatever the spec's hold (vipu submit's own hold, not its user's)
    uid: int | None = None  # the owner's uid, as the controller knows it (ControlPlane.uid)


class naming_spec:  # noqa: N801 - used as the function it replaced: `with naming_spec(k, n, source):`
    """A refusal raised inside names the spec it is about, when a call has several: `spec 3 of 40 (b.yaml): ...`,
    and says that none of them was queued (one call queues all or none). The refusal keeps its reason, fields and
    object, the fields marked as the spec's (`spec_index`, 0-based: the edge makes them jobs[2].spec.time_limit).
    A class, not a generator: a submission enters it three times, and a generator's context costs several times
    as much."""

    __slots__ = ("index", "count", "source")

    def __init__(self, index: int, count: int, source: str = ""):
        self.index, self.count, self.source = index, count, source

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, traceback) -> None:
        if not isinstance(e, VipuError):
            return
        index, count = self.index, self.count
        if count == 1:
            e.spec_index = index
            return  # raised as it is
        label = f" ({self.source})" if self.source else ""
        named = type(e)(f"spec {index + 1} of {count}{label}: {e.message}; nothing was queued", reason=e.reason,
                        violations=e.violations or ((None, e.message),), resource=e.resource)
        named.spec_index = index
        raise named from None


class Submitted(NamedTuple):
    """What a submission queued, or (duplicate) what an earlier one with its request id did."""

    jobs: list[Job]
    duplicate: bool


def check_ipus(spec: JobSpec, pod: PodConfig) -> None:
    """spec.ipus is a partition size the Pod can give; too many, the refusal names what else changes with it (a
    train layout's r, as `vipu plan --pod` says)."""
    fewer = spec.workload.fewer_ipus(pod.max_partition_ipus)
    check_size(spec.ipus, pod, "ipus", too_many_fix(spec.ipus, fewer) if fewer else None)


def resolve(spec: JobSpec, pod: PodConfig, config: SchedulerConfig) -> JobSpec:
    """The spec with its QOS and time limit filled in, or InvalidArgument naming the field that can never work."""
    check_job_title(spec.name)
    check_name("user", spec.user)
    if spec.account is not None:
        check_name("account", spec.account)
    if spec.allocation is not None:
        check_name("allocation", spec.allocation)
    check_ipus(spec, pod)
    for field, path in (("output", spec.output), ("error", spec.error)):
        if path is not None and not path.startswith("/"):  # here, not in the model: stored jobs load as they are
            raise InvalidArgument(
                f"{field} {path!r} is relative, and the controller has no working directory of yours; give an"
                " absolute path (vipu submit makes one from a relative path)"
            )
    if spec.qos is not None and not spec.qos.strip():  # an empty --qos read as the default hid a broken script
        raise InvalidArgument(f"qos is empty; give one of {', '.join(sorted(config.qos))}, or leave it out for"
                              f" the default, {config.default_qos}")
    qos_name = spec.qos or config.default_qos
    qos = config.qos.get(qos_name)
    if qos is None:
        raise InvalidArgument(f"qos {qos_name!r} is unknown; use one of {', '.join(sorted(config.qos))}")
    time_limit = spec.time_limit if spec.time_limit is not None else config.default_time_limit
    if math.isinf(time_limit):  # UNLIMITED, as Slurm gives it: the longest the QOS allows
        time_limit = qos.max_time_limit if qos.max_time_limit is not None else MAX_SECONDS
    if qos.max_time_limit is not None and time_limit > qos.max_time_limit:
        raise InvalidArgument(
            f"time_limit is {format_duration(time_limit)} but qos {qos_name} allows at most"
            f" {format_duration(qos.max_time_limit)}; ask for less or use another qos"
        )
    for limit, what in ((qos.max_ipus_per_user, "max_ipus_per_user"), (qos.max_ipus, "max_ipus")):
        if limit is not None and spec.ipus > limit:
            raise InvalidArgument(
                f"ipus is {spec.ipus} but qos {qos_name} has {what} {limit}, so the job could never start; ask for"
                f" at most {limit} IPUs or use another qos"
            )
    if spec.array is not None:
        try:
            spec.parsed_array(config.max_array_tasks)
        except ArraySyntaxError as e:
            raise InvalidArgument(f"array {e}") from None
    if spec.qos == qos_name and spec.time_limit == time_limit:
        return spec
    return spec.model_copy(update={"qos": qos_name, "time_limit": time_limit})


class ResolvedSpecs:
    """resolve() once per spec object. Why: the controller's spec cache (control/spec_cache.py) hands every
    submission of the same text the same JobSpec, so a burst of them resolves it once, and their jobs share one
    resolved spec instead of a copy each. Safe: resolve is a function of the spec, the Pod and the config, all
    frozen, and a new config gets a new cache (Scheduler._configure). Only successes are kept."""

    KEPT = 256  # spec objects remembered; past that the cache starts again

    def __init__(self, pod: PodConfig, config: SchedulerConfig):
        self.pod, self.config = pod, config
        self._by_id: dict[int, tuple[JobSpec, JobSpec]] = {}  # id(spec) -> (spec, resolved): the spec held, so
        # its id is not reused while it is here

    def __call__(self, spec: JobSpec) -> JobSpec:
        hit = self._by_id.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        resolved = resolve(spec, self.pod, self.config)
        if len(self._by_id) >= self.KEPT:
            self._by_id.clear()
        self._by_id[id(spec)] = (spec, resolved)
        return resolved


def resolve_begin(spec: JobSpec, now: float) -> float | None:
    """The absolute begin time of a job submitted at `now` (None: none asked for). A time in the past is fine (the
    job is eligible at once, as in Slurm); one more than a year ahead is refused as a typo."""
    begin = begin_time(spec.begin, now)
    if begin is not None and begin - now > MAX_SECONDS:
        days = (begin - now) / 86400
        raise InvalidArgument(
            f"begin is {days:,.0f} days from now; a begin time may be at most 366 days ahead: check the year (or the"
            " unit: numbers are Unix seconds, not milliseconds)"
        )
    return begin


def check_submit_limits(table: JobTable, config: SchedulerConfig, spec: JobSpec, count: int, added: Counter) -> None:
    """Slurm's MaxSubmitJobs for the user and the account: their pending and running jobs, this submit's `count`
    included (and `added`, what the specs before it in the same call add, by owner); ResourceExhausted otherwise."""
    limits = (("user", spec.user, config.max_submit_jobs_per_user),
              ("account", spec.account, config.max_submit_jobs_per_account))
    for kind, name, limit in limits:
        if limit is None or name is None:
            continue
        if count > limit:  # no wait or cancel makes room for it
            raise InvalidArgument(
                f"this submit adds {count:,} jobs (array tasks count each), but each {kind} may have at most"
                f" {limit:,} queued or running (max_submit_jobs_per_{kind}): submit at most {limit:,} tasks, e.g. an"
                " array in parts")
        has = table.active_by_owner[(kind, name)] + added[(kind, name)]
        if has + count > limit:
            raise ResourceExhausted(
                f"{kind} {name} has {has:,} jobs queued or running and this submit adds {count:,}; each {kind} may"
                f" have at most {limit:,} (max_submit_jobs_per_{kind}): wait for some to finish or cancel some",
                reason="SUBMIT_LIMIT")


def check_request_id(request_id: str) -> None:
    if not request_id or len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
        raise InvalidArgument(
            f"request_id must be 1 to {MAX_REQUEST_ID} printable characters (a UUID is a good choice)"
        )


def earlier_jobs(table: JobTable, spec: JobSpec, request_id: str,
                 recall: Callable[[str, str], list[Job]] | None = None) -> list[Job]:
    """The jobs an earlier submit by this spec's user with this request id queued ([] if none; another user's key
    is not theirs), for a retry to be answered with; AlreadyExists if that submit was of a different spec. `recall`
    finds them in the Journal's history once they have ended and left memory (purge.py)."""
    check_request_id(request_id)
    earlier = [table.jobs[i] for i in table.request_ids.get((spec.user, request_id), [])]  # type: ignore[arg-type]
    if not earlier and recall is not None:
        earlier = recall(spec.user, request_id)  # type: ignore[arg-type]
    first = earlier[0] if earlier else None
    if first is not None and not _same_job(first.submitted_spec or first.spec, spec):  # as submitted, not updated
        raise AlreadyExists(f"request_id {request_id!r} was already used for job {first.id} with a different spec;"
                            " use a new request id for a new job", reason="REQUEST_ID_REUSED", field="request_id")
    return earlier


def _same_job(stored: JobSpec, spec: JobSpec) -> bool:
    """Whether a retry asks for the stored job: the same spec but for the command line that sent it (a retry of
    `vipu submit --request-id R` may add --json, or spell a flag otherwise)."""
    return stored == spec or stored.model_copy(update={"submit_line": spec.submit_line}) == spec


def check_dependency(spec: JobSpec, table: JobTable, new_ids: range, call_ids: range = range(0)) -> None:
    """`new_ids`: this spec's own; `call_ids`: those the same call gives the specs before it (submit_many)."""
    dep = spec.parsed_dependency()
    if dep is None:
        return
    for job_id in sorted(dep.ids):
        named = _named(dep, job_id)
        if job_id in call_ids:
            raise InvalidArgument(
                f"dependency names {named}, which this same call queues: a job may depend only on jobs queued"
                " before it; submit the dependent spec in a call of its own, after this one"
            )
        if job_id in new_ids:
            raise InvalidArgument(
                f"dependency names {named}, which is this submission itself: a cyclic dependency can never be"
                " satisfied; depend on earlier jobs only"
            )
        if job_id not in table.jobs and job_id < table.next_id:  # ids are never reused: it ended and was purged
            raise InvalidArgument(
                f"dependency names {named}, which ended more than min_job_age ago and has left the queue, as"
                f" Slurm's MinJobAge purges it; `vipu history -j {job_id}` says how it ended: submit this job only if"
                " that outcome is the one you wanted", field="dependency")
        if job_id not in table.jobs:
            raise InvalidArgument(
                f"dependency names {named}, which does not exist; `vipu queue` and `vipu history` list job ids"
            )
    for array, task in sorted(dep.tasks):
        tasks = table.arrays.get(array)
        if not tasks:
            raise InvalidArgument(f"dependency names task {array}_{task}, but job {array} is not an array job; name"
                                  f" the job itself ({array})")
        if not any(table.jobs[t].array_task_id == task for t in tasks):
            raise InvalidArgument(f"dependency names task {array}_{task}, but array job {array} has no task {task};"
                                  " `vipu queue -r` and `vipu history` list its tasks")


def _named(dep, job_id: int) -> str:
    """How the dependency names the job: "job 28", or "task 28_1" when it names only a task of it."""
    tasks = sorted(task for array, task in dep.tasks if array == job_id)
    plain = any(r == job_id for c in dep.clauses for r in c.ids)
    return f"job {job_id}" if plain or not tasks else f"task {job_id}_{tasks[0]}"


def build_jobs(spec: JobSpec, first_id: int, count: int, now: float, request_id: str | None,
               indices: tuple[int, ...] | None, begin: float | None = None, held: bool = False,
               uid: int | None = None) -> list[Job]:
    """The PENDING records of a resolved spec (every value checked above, so none is validated again)."""
    state = JobState.PENDING
    now = float(now)
    eligible = None if spec.hold or held or spec.dependency is not None else eligible_from(begin, now)
    array_job_id = first_id if indices is not None else None
    return [
        Job.trusted(
            id=job_id, name=spec.name, user=spec.user, uid=uid, account=spec.account,
            partition=job_partition_name(job_id),
            array_job_id=array_job_id, array_task_id=indices[k] if indices is not None else None, spec=spec,
            state=state, held=spec.hold or held, begin_time=begin, eligible_time=eligible, submit_time=now,
            request_id=request_id,
            history=[Transition(state, now)],
        )
        for k, job_id in enumerate(range(first_id, first_id + count))
    ]
