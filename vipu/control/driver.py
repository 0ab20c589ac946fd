"""The one event loop: due events in a fixed order, then one scheduling cycle, its effects carried out by an
Executor. The live controller, `vipu simulate` and the scheduler tests all run this code.

Why one heap keyed (time, rank, sequence), as SimPy's: equal times are handled in a fixed order, so a run is
exactly repeatable, and the order says the rules once. At one time, arrivals come first, then workloads that ended,
then time limits: a workload that ends exactly at its time limit has COMPLETED, not TIMEOUT. Begin times (sbatch
--begin) and the delays of after:ID+MINUTES are wake-ups: the cycle that runs then lets the job in; so is a
dependency the step's own starts met (after:ID), so the job it lets in is considered at once. Events due before
`now` are handled at their own time (after a restart that can be long ago), so a run's record says when its time ran
out, not when it was seen.

Why the clock is the caller's: `step(now)` takes the time, so a wall clock (realtime.py) and a virtual clock
(`run`) advance the same code, and nothing here reads the system time.
"""

from __future__ import annotations

import heapq
from collections import Counter
import logging
import math
from typing import Callable, Iterable, Mapping, NamedTuple, Protocol

from vipu.control.lifecycle import together
from vipu.errors import VipuError
from vipu.scheduler.effects import Effect, StartJob, StopJob
from vipu.scheduler.gate_openings import Teardown
from vipu.scheduler.job_record import Job
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.workload import Ending

log = logging.getLogger("vipu.driver")

# Ranks: the order of events due at the same time. Arrivals (a trace's submissions) come before all of them; they
# are kept in a sorted list of their own, where a replay may hold millions.
ENDED, TIME_LIMIT, WAKE = range(3)


class StartFailed(VipuError):
    """The executor could not start a job: its partition could not be made (like a failed Slurm prolog: the job ends
    NODE_FAIL and goes back to the queue if its spec allows), or its workload could not (`state` FAILED)."""

    code = "FAILED_PRECONDITION"

    def __init__(self, message: str, state: JobState = JobState.NODE_FAIL):
        super().__init__(message)
        self.state = state


class Executor(Protocol):
    """Carries out the scheduler's effects. The live one makes partitions, brings machines up and runs workloads;
    the replay's only says when each workload ends."""

    def start(self, start: StartJob) -> Ending | None:
        """Start the job's run; returns when its workload ends by itself, if that is known now. Raises
        StartFailed if it cannot start."""

    def stop(self, stop: StopJob) -> float | None:
        """Stop the run's workload and free its partition. None: done. A number of seconds: its work goes on ending
        for at most that long (KillWait) and keeps what it ran on until it reports its teardown (the control plane
        then calls Scheduler.cleaned)."""


class Arrival(NamedTuple):
    at: float
    spec: JobSpec


Masks = Callable[[], tuple[int | None, Mapping[str, int] | None]]


class Driver:
    def __init__(self, scheduler: Scheduler, executor: Executor, masks: Masks | None = None, estimates: bool = True):
        self.scheduler = scheduler
        self.executor = executor
        self.masks = masks  # the IPUs a cycle may place on (the live controller's partitions); None: the Pod's
        self.estimates = estimates  # work out estimated starts (nobody reads them in a replay)
        self._heap: list[tuple] = []  # (time, rank, seq, job id, run start, exit code, final state, signal, why)
        self._seq = 0
        self._arrivals: list[Arrival] = []  # sorted by time; consumed from `_next`
        self._next = 0
        self._wakes: set[float] = set()  # begin and dependency times a wake-up is queued for
        self._endings: dict[int, tuple[float, Ending | None]] = {}  # running job -> (its run's start, its end)
        self.cycles = 0

    # -- what the loop waits for --------------------------------------------------------------------------------
    def _push(self, at: float, rank: int, job_id: int = 0, started: float = 0.0, exit_code: int = 0,
              state: JobState | None = None, signal: int = 0, why: str | None = None) -> None:
        heapq.heappush(self._heap, (at, rank, self._seq, job_id, started, exit_code, state, signal, why))
        self._seq += 1

    def arrive(self, arrivals: Iterable[Arrival]) -> None:
        """Jobs to submit at their times (a trace): kept sorted apart from the heap, where there can be millions."""
        self._arrivals = sorted([*self._arrivals[self._next:], *arrivals], key=lambda a: a.at)  # stable
        self._next = 0

    def run_started(self, job_id: int, started: float, end_by: float, ending: Ending | None) -> None:
        """Watch a run: its workload's own end if that comes first (a tie counts as the workload's), else its time
        limit. Also for runs that go on after a controller restart."""
        self._endings[job_id] = (started, ending)
        if ending is not None and ending.at <= end_by:
            self._push(ending.at, ENDED, job_id, started, ending.exit_code)
        elif end_by < math.inf:
            self._push(end_by, TIME_LIMIT, job_id, started)

    def limit_changed(self, job_id: int, now: float) -> None:
        """A running job's time limit changed (scontrol update): its run is watched against the new limit (an event
        at the old one is stale, and the scheduler ignores it); a limit already past ends the run now, in this call,
        so the update's reply shows the job TIMEOUT."""
        job = self.scheduler.table.jobs[job_id]
        if job.state is not JobState.RUNNING:
            return
        started, ending = self._endings.get(job_id, (job.start_time, None))
        self.run_started(job_id, job.start_time, max(job.end_by, now), ending if started == job.start_time else None)
        if job.end_by <= now:
            self._due(now)

    def watch(self, ending: Callable[[Job], Ending | None]) -> None:
        """Watch the runs already going when the driver starts (after a controller restart); `ending(job)` says
        when a run's workload ends by itself, if that is known."""
        for job_id in sorted(self.scheduler.table.running):
            job = self.scheduler.table.jobs[job_id]
            if job.state is JobState.RUNNING:
                self.run_started(job.id, job.start_time, job.end_by, ending(job))

    def next_time(self) -> float | None:
        """When the next event is due, or None."""
        times = []
        if self._heap:
            times.append(self._heap[0][0])
        if self._next < len(self._arrivals):
            times.append(self._arrivals[self._next].at)
        return min(times) if times else None

    # -- one step ---------------------------------------------------------------------------------------------
    def step(self, now: float) -> None:
        """Handle every event due by `now`, each at its own time, then run one cycle at `now`."""
        self._due(now)
        masks = self.masks() if self.masks is not None else (None, None)
        with together(self.scheduler.journal):  # a start the cycle made and the driver postponed is not logged
            self.apply(self.scheduler.cycle(now, *masks, estimates=self.estimates), now)
        self.cycles += 1
        if self.scheduler.gate(now):  # the runs it started met dependencies (after:ID): a cycle at once lets them in
            self._push(now, WAKE)
        wake = self.scheduler.table.next_wake()  # a begin time, or a dependency's delay (after:ID+MINUTES)
        if wake is not None and wake > now:
            self._wake_at(wake)

    def _wake_at(self, at: float) -> None:
        if at not in self._wakes:
            self._wakes.add(at)
            self._push(at, WAKE)

    def ended(self, job_id: int, started: float, now: float, exit_code: int, state: JobState | None = None,
              signal: int = 0, why: str | None = None) -> None:
        """A workload that only it could tell the end of (a training run, a program) ended at `now`: events due
        until then come first, so a time limit that ran out before it wins. State None: COMPLETED on exit code and
        signal 0, else FAILED; `why`, what ended it when not its program (kept as the job's ended_by). The next
        step's cycle uses the freed IPUs."""
        self._push(now, ENDED, job_id, started, exit_code, state, signal, why)
        self._due(now)

    def _due(self, now: float) -> None:
        s, heap, arrivals = self.scheduler, self._heap, self._arrivals
        while True:
            at = heap[0][0] if heap else math.inf
            if self._next < len(arrivals) and arrivals[self._next].at <= min(at, now):
                arrival = arrivals[self._next]  # arrivals first at equal times
                self._next += 1
                s.submit(arrival.spec, arrival.at)
                continue
            if at > now:
                return
            at, rank, _, job_id, started, exit_code, state, signal, why = heapq.heappop(heap)
            if rank == ENDED:
                if s.table.running_since(job_id, started) is not None:
                    self.apply(s.job_finished(job_id, at, state, exit_code, signal, why), at)
            elif rank == TIME_LIMIT:
                self.apply(s.time_limit_reached(job_id, started, at), at)
            else:
                self._wakes.discard(at)

    def apply(self, effects: list[Effect], now: float, requeue_cycle: bool = True) -> None:
        """Carry out effects in order (stops come before starts); a start that fails ends its job NODE_FAIL.

        A run stopped with its job back in the queue (preempted, NODE_FAIL, `vipu requeue`) brings a cycle at `now`:
        until a cycle has walked a job, it has no reason nor estimated start (reasons.pending_reason), and the cycle
        that preempted it ran before it was requeued. Not after a failed start (`requeue_cycle` False): that cycle would
        try the same start again at once, and a fault that lasts (a partition that cannot be made) would spin; the
        job is tried again at the next event."""
        for effect in effects:
            if type(effect) is StopJob:
                self._endings.pop(effect.job_id, None)
                if effect.requeued and requeue_cycle:
                    self._wake_at(now)
                grace = self.executor.stop(effect)
                if grace is not None:  # torn down later: until then the job may not start again, nor its IPUs
                    self.scheduler.cleaning(effect.job_id, now, Teardown(now + grace, effect.first_ipu, effect.ipus))
                continue
            if effect.after and self.scheduler.postponed(effect, now):
                continue  # a victim of its preemption still holds its IPUs: it starts after their teardown
            try:
                ending = self.executor.start(effect)
            except StartFailed as e:
                log.error("job %s could not start: %s", effect.job_id, e.message)
                self.apply(self.scheduler.job_finished(effect.job_id, now, e.state, exit_code=1, why=e.message), now,
                           requeue_cycle=False)
                continue
            self.run_started(effect.job_id, effect.start_time, effect.end_by, ending)

    # -- virtual time ------------------------------------------------------------------------------------------
    def run(self, until: float = math.inf, after_step: Callable[[float], None] | None = None) -> float | None:
        """Step from event to event in virtual time until none is left (or the next is after `until`); returns
        the time of the last step. `after_step(now)` sees the state after each."""
        last = None
        while (now := self.next_time()) is not None and now <= until:
            self.step(now)
            last = now
            if after_step is not None:
                after_step(now)
        return last


class Timers:
    """The replay's and the tests' executor: a workload's end is known from its spec (sleep), nothing else runs."""

    def __init__(self) -> None:
        self.stopped: Counter[JobState] = Counter()  # runs stopped, by how they ended

    def start(self, start: StartJob) -> Ending | None:
        return start.workload.ending(start.start_time)

    def stop(self, stop: StopJob) -> None:
        self.stopped[stop.state] += 1
