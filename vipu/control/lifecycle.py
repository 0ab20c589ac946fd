"""One log line per job and partition lifecycle event, and per admin change (admin_events.py), written from one
place: the Journal the scheduler and the partition controller commit every change through. docs/logging.md lists
the events and their fields.

Why the journal: every change of a job or a partition is committed before memory changes, from whichever path
made it (a submit or a cancel over gRPC, the scheduling loop starting and ending runs, a machine failure, a
restart's recovery), so reading the records that go by sees them all, and no path can forget to log. A job's
history (its transitions, in order) says what happened since its last record went by, even several steps in one
commit (a run that ended NODE_FAIL and was requeued); who asked comes from the RPC being served (callers.py).
The replay (`vipu simulate`) commits to no journal, so it logs nothing.

Why the events may be worked out elsewhere: comparing each record with the last and making its log record (30 us of
CPU a submission on this project's VM, with the line's formatting) was done under the state lock, before the RPC
answered. The controller's log writer (server/log_format.py) runs that work
on its own thread, in the order of the commits and of the other lines, with the RPC's call as it was (who asked,
its request id); without it (tests, tools) it is done as the change commits.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager, nullcontext
from typing import Callable, ContextManager, Iterable, Iterator, NamedTuple

from pydantic import BaseModel

from vipu.control.admin_events import AdminEvents
from vipu.control.callers import asked_by, current, serving
from vipu.partition.partition_states import PartitionState
from vipu.partition.pod_state import Journal
from vipu.partition.rules import job_of_partition, job_partition_name
from vipu.scheduler.arrays import spans
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, TRANSITIONS, JobState

log = logging.getLogger("vipu.events")
_elsewhere: Callable[[Callable[[], None]], None] | None = None  # runs work later, in order (work_elsewhere)


def work_elsewhere(hand_over: Callable[[Callable[[], None]], None] | None) -> None:
    """Work out the events' lines by `hand_over(work)`, which runs each work later, in the order given (the log
    writer's thread); None: in the committing thread, as it commits."""
    global _elsewhere
    _elsewhere = hand_over


class JobMark(NamedTuple):
    """What of a job's last record the next one is compared with."""

    transitions: int
    held: bool
    admin_hold: bool


class Event(NamedTuple):
    name: str  # job_submitted, job_started, ..., partition_created
    subject: str  # what the message names: "job 5", "partition p1"
    array: int | None  # the array job, for a task's event: a commit's tasks with the same event share a line
    task: int | None
    fields: dict


def _mark(job: Job) -> JobMark:
    return JobMark(len(job.history), job.held, job.admin_hold)


class LifecycleLog:
    """A Journal: commits go to `journal` (the store); once committed, each lifecycle event they make is logged."""

    def __init__(self, journal: Journal, records: Iterable[tuple[str, BaseModel]] = (), per_machine: int = 4):
        """`per_machine`: the Pod's IPUs per machine, for the admin's lines (admin_events.py)."""
        self.journal = journal
        self._jobs: dict[int, JobMark] = {}
        self._partitions: dict[str, BaseModel] = {}
        self._batch: tuple[int, list] | None = None  # (thread, commits) while `together`
        records = list(records)
        self._admin = AdminEvents(records, per_machine)
        for kind, record in records:  # what the state already holds: no event for it
            if kind == "job":
                self._jobs[record.id] = _mark(record)
            elif kind == "partition":
                self._partitions[record.name] = record

    def commit(self, puts: Iterable[tuple[str, str, BaseModel]], deletes: Iterable[tuple[str, str]]) -> None:
        puts, deletes = list(puts), list(deletes)
        self.journal.commit(puts, deletes)
        batch = self._batch
        if batch is not None and batch[0] == threading.get_ident():
            batch[1].append((puts, deletes))
            return
        self._hand_over([(puts, deletes)])

    @contextmanager
    def together(self) -> Iterator[None]:
        """Log this thread's commits made inside as one, each job by its last record. Why: a scheduling step
        may commit a record and take it back (a preemptor's start postponed until its victims are torn down,
        claims.py); logged one by one, the preemptor was logged as started while it still waited."""
        self._batch = (threading.get_ident(), [])
        try:
            yield
        finally:
            commits, self._batch = self._batch[1], None
            if commits:
                self._hand_over(_merged(commits))

    def _hand_over(self, commits: list[tuple[list, list]]) -> None:
        hand_over = _elsewhere
        if hand_over is None:
            self._logged(commits)
            return
        call = current()  # the records are never changed in place (each change is a copy), so they can wait
        at = time.time()  # the lines' time: the commit's, not the writer's (see _write)

        def work() -> None:
            if call is None:
                self._logged(commits, at)
                return
            with serving(call):
                self._logged(commits, at)

        hand_over(work)

    def _logged(self, commits: list[tuple[list, list]], at: float | None = None) -> None:
        try:
            for puts, deletes in commits:
                self._log(puts, deletes, at)
        except Exception:  # noqa: BLE001 - the change is committed: a line that cannot be written must not undo it
            log.exception("could not log the lifecycle events of a change")

    def _log(self, puts: list, deletes: list, at: float | None) -> None:
        events: list[Event] = []
        other = False  # a record of another kind: the admin's, perhaps (a job's commit never asks admin_events)
        for kind, name, record in puts:
            if kind == "job":
                events += self._job(record)
            elif kind == "partition":
                events += self._partition(record)
            else:
                other = True
        removed = []
        for kind, name in deletes:
            if kind == "partition":
                if (gone := self._partitions.pop(name, None)) is not None:
                    events.append(_partition_event("partition_removed", gone, "removed", state="REMOVED"))
                    removed.append(gone)
            elif kind == "job":  # an ended job moved to the history (purge.py): nothing more will happen to it
                self._jobs.pop(int(name), None)
            else:
                other = True
        if other or removed:
            for name, subject, what, fields in self._admin.events(puts, deletes, self._partitions.values(), removed):
                why = f" ({fields['reason']})" if fields.get("reason") else ""
                events.append(Event(name, f"{subject} {what}{why}", None, None, fields))
        if events and log.isEnabledFor(logging.INFO):
            by, request_id = asked_by()
            for event in _grouped(events):
                _write(event, by, request_id, at)

    def _job(self, job: Job) -> list[Event]:
        before = self._jobs.get(job.id)
        self._jobs[job.id] = _mark(job)
        if before is None:
            before = JobMark(0, job.held, job.admin_hold)  # new: its submission says whether it is held
        events = []
        for i in range(before.transitions, len(job.history)):
            state = job.history[i].state
            came_from = job.history[i - 1].state if i else None
            requeued = i + 1 < len(job.history) and job.history[i + 1].state is JobState.PENDING
            if state in TERMINAL and requeued:
                continue  # a run ended and queued again at once: one job_requeued line says both (run_state)
            event = _transition_event(job, came_from, state)
            if event is not None:
                events.append(event)
        if job.state is JobState.PENDING and job.held != before.held:
            if job.held:
                events.append(_job_event("job_held", job, "held",
                                         "JobHeldAdmin" if job.admin_hold else "JobHeldUser"))
            else:
                events.append(_job_event("job_released", job, "released", None))
        return events

    def _partition(self, partition) -> list[Event]:
        before = self._partitions.get(partition.name)
        self._partitions[partition.name] = partition
        if before is None:
            return [_partition_event("partition_created", partition, f"created ({_ipus(partition.size)} from IPU"
                                     f" {partition.first_ipu})")]
        if partition.state is not before.state and partition.state is PartitionState.FAILED:
            return [_partition_event("partition_failed", partition, "failed: an IPU under it failed")]
        if partition.state is not before.state and before.state is PartitionState.FAILED:
            return [_partition_event("partition_reset", partition, f"reset ({partition.state.value})")]
        return []


def together(journal: Journal) -> ContextManager[None]:
    """`journal.together()` if it logs events (LifecycleLog), else nothing to do."""
    return journal.together() if isinstance(journal, LifecycleLog) else nullcontext()


def _merged(commits: list[tuple[list, list]]) -> list[tuple[list, list]]:
    """The commits with each job's record only in the last that holds it (its history holds every step between)."""
    last = {(kind, name): i for i, (puts, _) in enumerate(commits) for kind, name, _ in puts if kind == "job"}
    return [([put for put in puts if put[0] != "job" or last[put[:2]] == i], deletes)
            for i, (puts, deletes) in enumerate(commits)]


def log_undone(logged: dict[int, Job], stored: dict[int, Job]) -> None:
    """A rollback (rollback.py): each job whose logged events the database does not hold says so, naming what it
    is as stored. Why: its events were logged as its change was queued, before the write that failed; without
    this line a reader of the log counted a submit that never happened."""
    if not log.isEnabledFor(logging.INFO):
        return
    events = []
    for job_id, job in sorted(logged.items()):
        now = stored.get(job_id)
        if now is None:
            events.append(_job_event("job_undone", job, "undone: its submit was not written (the state store could"
                                     " not write)", None, state="NONE"))
        elif _mark(now) != _mark(job):
            events.append(_job_event("job_undone", now, f"undone back to {now.state.value}: its change was not"
                                     " written (the state store could not write)", None))
    by, request_id = asked_by()
    for event in _grouped(events):
        _write(event, by, request_id)


def log_action(name: str, message: str, **fields) -> None:
    """An admin's action that commits nothing (a machine's actor killed): its line, as a commit's would be."""
    if log.isEnabledFor(logging.INFO):
        by, request_id = asked_by()
        _write(Event(name, message, None, None, {**fields, "reason": None}), by, request_id)


def _transition_event(job: Job, came_from: JobState | None, state: JobState) -> Event | None:
    if state is JobState.PENDING:
        if came_from is None:
            held = ", held" if job.held else ""
            return _job_event("job_submitted", job, f"submitted ({_ipus(job.ipus)}{held})", None,
                              name=job.name, ipus=job.ipus, qos=job.spec.qos)
        return _job_event("job_requeued", job, f"requeued after {came_from.value}", _reason(job, came_from, state),
                          requeue_count=job.requeue_count, run_state=came_from.value)
    if state is JobState.RUNNING:
        partition = job_partition_name(job.id)
        return _job_event("job_started", job, f"started on partition {partition}", None, partition=partition,
                          ipus=job.ipus, first_ipu=job.first_ipu)
    if state in TERMINAL:
        if state is JobState.CANCELLED:
            return _job_event("job_cancelled", job, "cancelled", _reason(job, came_from, state))
        exit_code = None if job.exit_code is None else f"{job.exit_code}:{job.signal}"
        return _job_event("job_ended", job, f"ended {state.value}", _reason(job, came_from, state),
                          exit_code=exit_code)
    return None  # COMPLETING: entered by no controller of this version


def _ipus(n: int) -> str:
    return f"{n} IPU" if n == 1 else f"{n} IPUs"


def _reason(job: Job, came_from: JobState | None, state: JobState) -> str | None:
    """Why, in the record's own words: what ended the run from outside, or the preemption, else the transition
    table's description of the edge."""
    if state is JobState.PREEMPTED or (state is JobState.PENDING and came_from is JobState.PREEMPTED):
        if job.preemption:
            return job.preemption
    if job.ended_by:
        return job.ended_by
    return TRANSITIONS.get(came_from, {}).get(state) if came_from is not None else None


def _job_event(event: str, job: Job, what: str, reason: str | None, **more) -> Event:
    fields = {"job_id": job.id, "user": job.user, "state": job.state.value, "reason": reason, **more}
    if job.array_job_id is not None:
        fields.update(array_job_id=job.array_job_id, array_task_id=job.array_task_id)
    why = f" ({reason})" if reason else ""
    return Event(event, f"job {job.display_id} of {job.user} {what}{why}", job.array_job_id, job.array_task_id,
                 fields)


def _partition_event(name: str, partition, what: str, state: str | None = None) -> Event:
    """`state`: what the partition is after the event, if not its record's (a removed one has no record)."""
    fields = {"partition": partition.name, "user": partition.owner, "state": state or partition.state.value,
              "size": partition.size, "job_id": job_of_partition(partition.name)}
    return Event(name, f"partition {partition.name} {what}", None, None, fields)


def _grouped(events: list[Event]) -> list[Event]:
    """Events of an array's tasks that say the same thing in one commit (an array submitted, its pending tasks
    cancelled) become one event naming the tasks, as squeue names them: 26_[0-99]. Others stay as they are."""
    if all(event.array is None for event in events):  # most commits (a submission of one job): nothing to group
        return events
    groups: dict[tuple, list[Event]] = {}
    out: list[Event | tuple] = []
    for event in events:
        if event.array is None:
            out.append(event)
            continue
        key = (event.name, event.array, event.fields.get("reason"), event.fields.get("state"))
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append(event)
    result = []
    for item in out:
        if isinstance(item, Event):
            result.append(item)
            continue
        tasks = groups[item]
        if len(tasks) == 1:
            result.append(tasks[0])
            continue
        first = tasks[0]
        indices = spans(sorted(t.task for t in tasks))
        what = first.subject.split(" ", 2)[2]  # "job 26_0 of bob submitted (...)" -> "of bob submitted (...)"
        fields = {k: v for k, v in first.fields.items() if k != "array_task_id"}
        fields.update(job_id=first.array, array_tasks=indices, tasks=len(tasks))
        result.append(first._replace(subject=f"jobs {first.array}_[{indices}] {what}", fields=fields))
    return result


def _write(event: Event, by: str, request_id: str | None, at: float | None = None) -> None:
    """`at`: when the change was committed (None: now). Why not the time the line is worked out: the log writer
    works a commit's lines out later, and a submit whose write failed was undone (log_undone) in the meantime; its
    `submitted` line, timed after its `undone` line, read as a submit made after its undoing."""
    fields = {"event": event.name, **event.fields, "by": by}
    if request_id is not None:
        fields["request_id"] = request_id
    record = log.makeRecord(log.name, logging.INFO, __file__, 0, "%s, by %s", (event.subject, by), None,
                            extra={"fields": fields})
    if at is not None:
        record.created, record.msecs = at, int(at % 1 * 1000) + 0.0
    log.handle(record)
