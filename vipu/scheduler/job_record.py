"""The job record the store keeps, and the one way a job changes state.

Why reason, estimated_start, unmet_dependency and priority are in the record but not written on every cycle: they
are derived from the queue at a moment, change each cycle for thousands of jobs, and are recomputed after a restart;
the scheduler fills them in on the copies it returns to queries. Everything else is committed before memory changes.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import STOPPED_RUNS, TRANSITIONS, JobState, check_transition


class EndedRun(NamedTuple):
    """The run a transition ended, as the job showed it then: sacct --duplicates shows each earlier run so, though
    the job's own fields are the next run's by then. `exit_code` None: not known (a run stopped from outside or
    lost, its program still ending or none to tell), until its program's end is told (Job.program_ended)."""

    exit_code: int | None
    signal: int  # what ended its program (Job.exit_signal)
    first_ipu: int | None


class Transition(NamedTuple):
    """When the job entered a state, and for the state that ends a run, that run. A tuple, stored in JSON as
    ["RUNNING", 12.0, null] or ["FAILED", 20.0, [3, 0, 128]]: one is made per state change of thousands of jobs a
    second in a replay, and a tuple costs a fifth of a model. A record stored before runs were kept has no third
    item, and loads with none."""

    state: JobState
    at: float
    run: EndedRun | None = None


class PriorityBreakdown(BaseModel):
    """One row of `vipu priority` (Slurm's sprio): weight x factor for each term, minus nice."""

    job_id: int
    user: str
    total: float
    age: float
    fairshare: float
    job_size: float
    qos: float
    nice: int

    @classmethod
    def trusted(cls, values: dict) -> PriorityBreakdown:
        """A row of values the scheduler computed itself (a dict the caller gives away), not validated again (`vipu
        queue --json` makes one for each of up to 10,000 pending jobs; validation was most of its cost)."""
        return _unvalidated(cls, values, set(values))


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    name: str
    user: str
    uid: int | None = None  # the owner's uid at the submit (sacct's UID); None: not known (or an older record)
    account: str | None = None
    partition: str
    array_job_id: int | None = None
    array_task_id: int | None = None
    spec: JobSpec  # resolved at submit: time_limit and qos are always set
    state: JobState
    held: bool = False
    admin_hold: bool = False  # the hold is an admin's (JobHeldAdmin): only an admin may release it
    begin_time: float | None = None  # sbatch --begin, made absolute at submit: not eligible before it (BeginTime)
    eligible_time: float | None = None  # when it became eligible (eligibility()); None while held or waiting on its
    # dependency. Stored as it happens, since sacct shows it long after and neither is in the history.
    reason: str | None = None
    estimated_start: float | None = None
    unmet_dependency: str | None = None  # the dependency as squeue shows it (dependency_reads.shown_dependency), ""
    # once met; worked out for queries like reason; None: not worked out (a record as stored)
    submit_time: float
    start_time: float | None = None
    end_time: float | None = None
    exit_code: int | None = None
    exit_signal: int = 0  # the signal that ended a program's run by itself (0:11 for a segfault); see `signal`
    first_ipu: int | None = None
    requeue_count: int = 0
    recovery: str | None = None  # what the last controller restart did to this job's run, and why
    preemption: str | None = None  # which job's QOS preempted its last run, and whether it was requeued or cancelled
    ended_by: str | None = None  # what ended its last run from outside (failed IPUs, a start that failed, a forced
    # partition removal, a controller stop); None when its workload, time limit or a user's cancel or requeue ended it
    cancelled_by_uid: int | None = None  # the uid of whoever cancelled it (sacct's "CANCELLED by UID"), if known
    request_id: str | None = None
    submitted_spec: JobSpec | None = None  # the spec as submitted, once an update changed it (for request-id retries)
    fixed_priority: int | None = None  # set by an admin (scontrol update Priority=N): replaces the multifactor one
    priority: PriorityBreakdown | None = None
    history: list[Transition] = []

    @property
    def ipus(self) -> int:
        return self.spec.ipus

    @property
    def display_id(self) -> str:
        """The id as squeue shows it: 26_50 for task 50 of array job 26."""
        return str(self.id) if self.array_job_id is None else f"{self.array_job_id}_{self.array_task_id}"

    @property
    def time_limit(self) -> float:
        return self.spec.time_limit  # type: ignore[return-value]

    @property
    def signal(self) -> int:
        """The signal of sacct's ExitCode (code:signal): the controller stops a run with SIGTERM (15) at its time
        limit, or when it is cancelled, preempted or requeued while it runs; once a stopped program's end is known
        (stopped_ends.py), the signal that ended it (9 if it was deaf to SIGTERM until KillWait, 0 if it exited);
        a program that a signal ended by itself says which; 0 otherwise, also for a job that never ran."""
        # (a requeued run was stopped too; a job cancelled or preempted while it waited has no start time)
        stopped = self.state is JobState.TIMEOUT or (self.state in _STOPPED and self.start_time is not None)
        return SIGTERM if stopped and self.exit_code is None else self.exit_signal

    @property
    def runs_started(self) -> int:
        """How many runs it has started, a running one included: the number its latest run goes by (`vipu logs`,
        a program's output files and its supervisor's records)."""
        return sum(t.state is JobState.RUNNING for t in self.history)

    @property
    def latest_start(self) -> float | None:
        """When its latest run began, also once it went back to the queue after it (start_time is cleared then)."""
        return next((t.at for t in reversed(self.history) if t.state is JobState.RUNNING), None)

    @property
    def end_by(self) -> float | None:
        return None if self.start_time is None else self.start_time + self.time_limit

    @property
    def waiting_since(self) -> float:
        """When the job's current wait in the queue began: the later of its last entry into PENDING (its submission,
        or its requeue) and its begin time. Why not the submission: time before `--begin` is a wait the user asked
        for, and sacct counts a job's wait from its eligible time too, so a begin time would pass for starvation.
        Time held or waiting on a dependency counts, as it does for the age factor (docs/mapping.md)."""
        queued = max((t.at for t in self.history if t.state is JobState.PENDING), default=self.submit_time)
        return queued if self.begin_time is None else max(queued, self.begin_time)

    def eligibility(self, met: bool, now: float) -> float | None:
        """The eligible_time this pending record carries at `now` (`met`: its dependency, if any, is met): None
        while held or waiting on its dependency; kept while it stays eligible; else now, or its begin time if
        later."""
        if self.held or (not met and self.spec.dependency is not None):
            return None
        begin, since = self.begin_time, self.eligible_time
        if since is not None and since <= now and (begin is None or begin <= since):
            return since
        return eligible_from(begin, now)

    def with_eligibility(self, met: bool, now: float) -> Job:
        """The record with the eligible time it has at `now` (eligibility); itself if that is unchanged."""
        since = self.eligibility(met, now)
        return self if since == self.eligible_time else self.updated({"eligible_time": since})

    @property
    def eligible(self) -> float | None:
        """eligible_time; for a record stored before it was kept, the later of its submit and begin time, as shown
        then."""
        if "eligible_time" in self.__pydantic_fields_set__:
            return self.eligible_time
        return self.submit_time if self.begin_time is None else max(self.submit_time, self.begin_time)

    @classmethod
    def trusted(cls, **values) -> Job:
        """A record built from values the scheduler computed itself (a validated spec, ids, times, a history),
        without validating them again: a replay builds thousands a second. Fields not given take their defaults."""
        fields = dict(_TEMPLATE)  # in field order, as a validated record has them
        fields["history"] = []
        fields.update(values)
        return _unvalidated(cls, fields, set(values))

    def updated(self, changes: dict) -> Job:
        """A copy with `changes`, which the scheduler computed itself: not validated again (see trusted)."""
        return _unvalidated(type(self), {**self.__dict__, **changes}, self.__pydantic_fields_set__ | changes.keys())

    def moved(self, state: JobState, now: float, **changes) -> Job:
        """A copy in `state` (checked against the transition table) with the time recorded in its history."""
        if state not in TRANSITIONS[self.state]:
            check_transition(self.id, self.state, state)  # raises, naming the transitions allowed
        run = None
        if self.state in _RUNS and state not in _RUNS:  # a run ends: what ended it from outside, if anything did
            changes.setdefault("ended_by", None)
            run = EndedRun(changes.get("exit_code", self.exit_code), changes.get("exit_signal", self.exit_signal),
                           self.first_ipu)
        changes["state"] = state
        changes["history"] = [*self.history, Transition(state, now, run)]
        return self.updated(changes)

    def program_ended(self, started: float, exit_code: int, signal: int) -> Job | None:
        """The record once the program of its run that began at `started`, a run ended without its exit code (stopped
        from outside, or lost), has ended with `exit_code` and `signal`: kept on the transition that ended that run,
        and in the job's own fields while it still rests in that end. None if there is no such run, it still runs,
        or its code is known already."""
        history = self.history
        i = next((i for i in range(len(history) - 1, -1, -1)
                  if history[i].state is _RUNNING and history[i].at == started), None)
        if i is None or i + 1 >= len(history):
            return None
        end = history[i + 1]
        latest = i + 2 == len(history) and self.state is end.state
        first_ipu = self.first_ipu if latest else None  # (a record stored before runs were kept: where is lost)
        run = end.run or EndedRun(self.exit_code if latest else None, self.exit_signal if latest else 0, first_ipu)
        if end.state not in _ENDED_UNTOLD or run.exit_code is not None:
            return None
        changes: dict = {"history": [*history[:i + 1], Transition(end.state, end.at, run._replace(
            exit_code=exit_code, signal=signal)), *history[i + 2:]]}
        if latest:
            changes.update(exit_code=exit_code, exit_signal=signal)
        return self.updated(changes)

    def started(self, now: float, first_ipu: int, priority: PriorityBreakdown) -> Job:
        """moved(RUNNING, now, ...) of a pending job that a cycle starts, written out: a cycle on a large Pod starts
        two thousand jobs, and the keyword arguments, the merge of two dicts and the union with a view of keys cost
        a third of the record; update()'s keywords and the Transition's own __new__ (a Python function) are left out
        too."""
        if _RUNNING not in TRANSITIONS[self.state]:
            check_transition(self.id, self.state, _RUNNING)
        fields = self.__dict__.copy()
        fields["state"], fields["start_time"], fields["first_ipu"] = _RUNNING, now, first_ipu
        fields["end_time"] = fields["exit_code"] = fields["reason"] = fields["estimated_start"] = None
        fields["priority"] = priority
        fields["history"] = [*self.history, _tuple_new(Transition, (_RUNNING, now, None))]
        return _unvalidated(type(self), fields, self.__pydantic_fields_set__ | _STARTED)

    def requeued(self, now: float, held: bool = False) -> Job:
        """Back in the queue under the same id (`held`: by its user): the last run's placement and times are cleared
        (history keeps them), it is eligible again from now, and the requeue count goes up. A running job's run
        ends REQUEUED first, as sacct records it."""
        job = self.moved(JobState.REQUEUED, now, end_time=now) if self.state is JobState.RUNNING else self
        held = held or job.held
        return job.moved(JobState.PENDING, now, start_time=None, end_time=None, first_ipu=None, exit_code=None,
                         exit_signal=0, requeue_count=self.requeue_count + 1, held=held,
                         eligible_time=None if held else eligible_from(self.begin_time, now))


def eligible_from(begin: float | None, now: float) -> float:
    """When a job free of holds and dependencies at `now` is eligible: then, or at its begin time if later."""
    return now if begin is None or begin <= now else begin


_RUNNING = JobState.RUNNING  # (a member looked up on its enum costs a fifth of a microsecond, three times a start)
_RUNS = (JobState.RUNNING, JobState.COMPLETING)
_STARTED = frozenset(("state", "start_time", "first_ipu", "end_time", "exit_code", "reason", "estimated_start",
                      "priority", "history"))  # the fields started() sets
_STOPPED = STOPPED_RUNS | {JobState.REQUEUED}  # with a start time: stopped while it ran
# the ends of a run recorded before its program's end is told: stopped from outside, or lost (NODE_FAIL: the
# controller's restart or failed IPUs ended it while its program went on ending)
_ENDED_UNTOLD = _STOPPED | {JobState.NODE_FAIL}
SIGTERM = 15
_new = object.__new__
_tuple_new = tuple.__new__  # a NamedTuple's own __new__ is a Python function: a frame per history entry
# The setters of BaseModel's slots, called directly: object.__setattr__ looks each name up along the class's MRO
# first, and a start sets them on two records (its job's and its priority row)
_set_dict, _set_given, _set_extra, _set_private = (BaseModel.__dict__[name].__set__ for name in (
    "__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))


def _unvalidated(cls, fields: dict, given: set[str]):
    """An instance of the pydantic model `cls` with these fields, as model_construct makes one but at a fraction of
    its cost (no defaults to fill in, no checks): for values the scheduler computed itself."""
    record = _new(cls)
    _set_dict(record, fields)
    _set_given(record, given)
    _set_extra(record, None)
    _set_private(record, None)
    return record
_TEMPLATE = {name: None if f.is_required() else f.get_default(call_default_factory=True)
             for name, f in Job.model_fields.items()}
assert all(isinstance(v, (type(None), bool, int, str)) for k, v in _TEMPLATE.items() if k != "history")  # immutable


class SchedulerMeta(BaseModel):
    """Persisted so that job ids are never handed out twice, even after a crash."""

    model_config = ConfigDict(extra="forbid")

    next_job_id: int

    @classmethod
    def trusted(cls, next_job_id: int) -> SchedulerMeta:
        """One the scheduler numbered itself, not validated again (every submission commits one)."""
        return _unvalidated(cls, {"next_job_id": next_job_id}, {"next_job_id"})


class PurgedUsage(BaseModel):
    """The fair-share usage of jobs that have left memory (purge.py), so a restart charges it without the history."""

    model_config = ConfigDict(extra="forbid")

    usage: dict[str, tuple[float, float]] = {}  # user -> (IPU-seconds, as of), as FairShare keeps it


META_NAME = "scheduler"
HISTORY_KIND = "job_history"  # an ended job moved out of memory: the store keeps it in its job history table

# Record kinds the scheduler commits through the Journal: (kind, name, model). Names: str(job.id) / META_NAME.
KINDS: dict[str, type[BaseModel]] = {"job": Job, "scheduler_meta": SchedulerMeta, "purged_usage": PurgedUsage}
