"""How a site tunes its scheduler: the QOS table, priority weights and the cycle's limits, as one pydantic config.

Why QOS carries preemption and limits: as in Slurm, a QOS is the one knob that says how important a job is, whom
it may evict, what happens to it when it is evicted itself, and how much of the Pod one user may hold with it.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Iterable, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from vipu.documents import read_document
from vipu.errors import InvalidArgument
from vipu.scheduler.arrays import MAX_ARRAY_TASKS
from vipu.scheduler.durations import parse_duration
from vipu.validation import describe
from vipu.spec_numbers import Number, Whole

Seconds = Annotated[float, BeforeValidator(parse_duration)]
DAY = 86400.0


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QosSpec(Strict):
    """One QOS (an entry of SchedulerConfig.qos), as sacctmgr's QOS fields."""

    priority: Whole = Field(0, ge=0, description="higher runs first; the QOS factor is priority / the largest priority")
    preempt: tuple[str, ...] = Field((), description="QOS names whose running jobs this QOS's jobs may evict")
    preempt_mode: Literal["requeue", "cancel"] = Field(
        "requeue", description="what happens to this QOS's jobs when they are evicted (requeue keeps the job id)"
    )
    max_jobs_per_user: Whole | None = Field(None, ge=1, description="running jobs per user (QOSMaxJobsPerUserLimit)")
    max_ipus_per_user: Whole | None = Field(None, ge=1, description="IPUs held per user (QOSMaxIpusPerUserLimit)")
    max_jobs_per_account: Whole | None = Field(
        None, ge=1, description="running jobs per account (QOSMaxJobsPerAccount; jobs without an account: no limit)")
    max_jobs: Whole | None = Field(None, ge=1, description="running jobs in this QOS (QOSGrpJobsLimit)")
    max_ipus: Whole | None = Field(None, ge=1, description="IPUs held by this QOS (QOSGrpIpusLimit)")
    max_time_limit: Seconds | None = Field(None, gt=0, description="longest time_limit a job may ask for (MaxWall)")

    @cached_property
    def limited(self) -> bool:
        """Whether running jobs must be counted for this QOS's limits."""
        return any(x is not None for x in (self.max_jobs_per_user, self.max_ipus_per_user, self.max_jobs_per_account,
                                           self.max_jobs, self.max_ipus))


DEFAULT_QOS = {
    "low": QosSpec(priority=0),
    "normal": QosSpec(priority=50),
    "high": QosSpec(priority=100, preempt=("low",)),
}


class PriorityWeights(Strict):
    """Slurm's PriorityWeight*: each factor is in [0, 1] and is multiplied by its weight."""

    age: Number = Field(1000.0, ge=0)
    fairshare: Number = Field(1000.0, ge=0)
    job_size: Number = Field(100.0, ge=0)
    qos: Number = Field(2000.0, ge=0)


class SchedulerConfig(Strict):
    policy: str = Field("backfill", description="fifo, priority, backfill or sjf (vipu.scheduler.policies)")
    policy_file: str | None = Field(
        None, description="a Python file defining schedule(request) and its queue ORDER, as the built-in policies"
        " do (docs/traces.md): it decides every cycle, and `policy` decides any cycle it fails"
    )
    qos: dict[str, QosSpec] = Field(
        default_factory=lambda: dict(DEFAULT_QOS),
        description="QOS name -> QosSpec (below); replaces the defaults whole. Preemption works as Slurm's"
        " PreemptType=qos: a job whose QOS lists another in `preempt` may evict that QOS's running jobs, and the"
        " evicted job's own QOS's `preempt_mode` says whether it is requeued or cancelled",
    )
    default_qos: str = Field("normal", description="the QOS of a job that names none")
    default_time_limit: Seconds = Field(3600.0, gt=0, description="for jobs that give none")
    weights: PriorityWeights = Field(PriorityWeights(), description="PriorityWeight* (below)")
    max_age: Seconds = Field(7 * DAY, gt=0, description="PriorityMaxAge: the age factor reaches 1 here")
    fairshare_half_life: Seconds = Field(7 * DAY, gt=0, description="PriorityDecayHalfLife of recorded usage")
    priority_calc_period: Seconds = Field(
        30.0, ge=0, description="PriorityCalcPeriod: recompute every pending job's priority at most this often"
    )
    max_job_test: Whole = Field(
        100, ge=1, description="bf_max_job_test: pending jobs per cycle that get a reservation and an estimated start"
    )
    max_array_tasks: Whole = Field(MAX_ARRAY_TASKS, ge=1, le=MAX_ARRAY_TASKS)
    max_jobs: Whole = Field(200_000, ge=1, description="MaxJobCount: pending + running jobs the queue holds")
    max_submit_jobs_per_user: Whole | None = Field(
        50_000, ge=1, description="MaxSubmitJobs of a user: their pending + running jobs; so one user cannot fill the"
        " whole queue (max_jobs) and lock everyone else out (null: no limit). For a test of 100,000 jobs from one"
        " user, put `max_submit_jobs_per_user: 100000` in a YAML file and start `vipu-server --scheduler-config FILE`")
    max_submit_jobs_per_account: Whole | None = Field(
        None, ge=1, description="MaxSubmitJobs of an account: its pending + running jobs (null: no limit)")
    first_job_id: Whole = Field(
        1, ge=1, le=2**31 - 1, description="FirstJobId: the lowest id the next job may get; ids go on from the larger"
        " of it and the stored next id. After restoring an older copy of the state, set it above the last id handed"
        " out, so no id is given twice: `vipu-admin last-job-id LOG` prints this line from the controller's log (an"
        " array's tasks counted)")
    min_job_age: Seconds = Field(
        300.0, ge=0, description="MinJobAge (seconds, or a Slurm time such as 5:00 or 5m): how long an ended job"
        " stays in the controller's memory before"
        " it moves to the on-disk history that `vipu history` reads (0: never moved)")

    @model_validator(mode="after")
    def _coherent(self) -> SchedulerConfig:
        if self.default_qos not in self.qos:
            raise ValueError(f"default_qos {self.default_qos!r} is not in qos ({', '.join(sorted(self.qos))}); add it")
        for name, spec in self.qos.items():
            unknown = [q for q in spec.preempt if q not in self.qos]
            if unknown:
                raise ValueError(f"qos {name}: preempt names unknown QOS {', '.join(unknown)}; define them first")
            if name in spec.preempt:
                raise ValueError(f"qos {name}: a QOS cannot preempt itself; remove {name} from its preempt list")
        from vipu.scheduler.policies import POLICIES  # late: the registry imports this module's types

        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r} is unknown; use one of {', '.join(sorted(POLICIES))}")
        return self

    @property
    def max_qos_priority(self) -> int:
        return max((q.priority for q in self.qos.values()), default=0)


def parse_config(data: object, source: str) -> SchedulerConfig:
    if data is None:
        return SchedulerConfig()
    if not isinstance(data, dict):
        raise InvalidArgument(
            f"invalid scheduler config {source}: expected a mapping of fields, got {type(data).__name__}"
        )
    try:
        return SchedulerConfig.model_validate(data)
    except ValidationError as e:
        raise InvalidArgument(describe(e, f"scheduler config {source}")) from None


def load_scheduler_config(path: str | None, policy: str | None, policy_file: str | None = None) -> SchedulerConfig:
    """The config of `--scheduler-config FILE` (the defaults without one), `policy` and `policy_file` (the --policy and
    --policy-file flags) overriding the file's; a policy_file the YAML names is read from the YAML's folder, and is
    loaded and checked here (policies/policy_file.py). Why here, not in the server: `vipu simulate` takes the same file, and a replay is worth something only
    if it runs the controller's exact QOS table and weights and refuses a bad file with the controller's words."""
    data: object = {}
    if path:
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgument(
                f"--scheduler-config {path}: cannot read it ({e}); give a readable YAML file"
            ) from None
        data = read_document(text, f"--scheduler-config {path}") or {}
    if policy and isinstance(data, dict):
        data["policy"] = policy
    if isinstance(data, dict) and isinstance(data.get("policy_file"), str) and path:
        data["policy_file"] = str(Path(path).parent / data["policy_file"])  # from the config file's folder
    if policy_file and isinstance(data, dict):
        data["policy_file"] = policy_file
    config = parse_config(data, path or "(flags)")
    if config.policy_file:
        from vipu.scheduler.policies.policy_file import load_policy_file  # late: the registry imports this module

        config = config.model_copy(update={"policy_file": load_policy_file(config.policy_file).path})  # checked now
    return config


def with_retired_qos(config: SchedulerConfig, names: Iterable[str]) -> SchedulerConfig:
    """The config with a stand-in (priority 0, no preemption, no limits) for each QOS in `names` it does not have.
    Why: a controller restarted with a QOS removed from its config still holds jobs that name it (Slurm's
    InvalidQOS); they are kept, and every priority, limit and preemption lookup finds an entry instead of failing."""
    missing = sorted(set(names) - set(config.qos))
    if not missing:
        return config
    return config.model_copy(update={"qos": {**config.qos, **{name: QosSpec() for name in missing}}})
