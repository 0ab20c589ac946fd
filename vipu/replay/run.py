"""Trace replay in virtual time: the live controller's Scheduler and driver, on a virtual clock.

Why the same Scheduler, policies and driver loop as the server: a replay's numbers are worth something only if they
come from the code that schedules real jobs. The driver (vipu/control/driver.py) steps from event to event in a
fixed order, so a replay is exactly repeatable; its executor here only says when each job's traced run time ends.
Estimated starts are off since nobody reads them (a property test checks that this changes no start). A job's
begin time (a trace's `begin` column) wakes the loop, as it does the live one, so the job starts when it becomes
eligible, not at the next unrelated event. Wall-clock time is only measured through a `timer` the caller passes in.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Callable, Sequence

from pydantic import ValidationError

from vipu.control.driver import Arrival, Driver, Timers
from vipu.errors import InvalidArgument, VipuError
from vipu.hardware.pod import PodConfig
from vipu.partition.pod_state import NoJournal
from vipu.replay.measures import BSLD_THRESHOLD, JobFigures, Series, figures, user_fairness
from vipu.replay.summary import ReplayResult, percentile
from vipu.replay.trace_rows import TraceJob
from vipu.scheduler.bits import usable_ipus
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.policies.policy_file import GuardedPolicy
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.submission import resolve
from vipu.scheduler.workload import SleepWorkload
from vipu.validation import describe

S = JobState
PROGRESS_EVERY = 10.0  # seconds of wall time between two progress lines of a long replay
PROGRESS_STEPS = 256  # steps between two readings of the timer, which costs a call
UNCAPPED = ("max_jobs", "max_submit_jobs_per_user")  # a site config's fields a replay does not apply (replay_run)


class _Replay:
    def __init__(self, jobs: Sequence[TraceJob], pod: PodConfig, config: SchedulerConfig, site: bool = False):
        self.site = site  # the config is a site's (--scheduler-config), not the defaults
        self.jobs = sorted(jobs, key=lambda j: j.submit_time)  # stable: equal times keep trace order
        self.s = Scheduler(pod, config, NoJournal())
        self.runs = Timers()
        self.driver = Driver(self.s, self.runs, estimates=False)
        self.used_ipu_seconds = 0.0
        self.arriving_ipu_seconds = 0.0  # of those, the ones up to the last submission (arrival_utilisation)
        self.unusable_waiting = 0.0  # integral of free IPUs outside every block the smallest eligible job could use
        self.end = self.jobs[0].submit_time if self.jobs else 0.0
        self.last_arrival = self.jobs[-1].submit_time if self.jobs else 0.0
        self._used = self._unusable = 0  # IPUs in use, and free IPUs no waiting job could use, since self.end
        self.series = Series([], [], [], [])
        self.progress: Callable[[str], None] | None = None  # told how far a long replay is (timer: its wall clock)
        self.timer: Callable[[], float] = lambda: 0.0
        self._shown_at = 0.0

    def specs(self) -> None:
        """Turn trace rows into job specs (part of reading the trace, before the timed event loop), each checked
        as a submit checks it, so that a row the Pod can never run is refused naming its file and line before the
        replay starts, not halfway through it."""
        self.spec_of = [self._spec(j) for j in self.jobs]

    def _spec(self, j: TraceJob) -> JobSpec:
        try:
            spec = JobSpec(name=j.name, ipus=j.ipus, time_limit=j.time_limit, qos=j.qos, user=j.user,
                           workload=SleepWorkload(duration=j.duration), begin=j.begin)
            spec = resolve(spec, self.s.pod, self.s.config)  # resolved once here, so each submit resolves nothing
        except ValidationError as e:
            raise InvalidArgument(f"{j.source}: {describe(e, 'row')}") from None
        except VipuError as e:
            raise InvalidArgument(f"{j.source}: {e.message}{self._qos_hint(j)}") from None
        return spec

    def _qos_hint(self, j: TraceJob) -> str:
        """Why a trace's QOS is unknown when it is: a site's QOS live in its scheduler config, not the defaults."""
        if self.site or not j.qos or j.qos in self.s.config.qos:
            return ""
        return " (the default scheduler config's); replay a site's QOS with its --scheduler-config FILE"

    def run(self) -> None:
        self.driver.arrive(Arrival(j.submit_time, spec) for j, spec in zip(self.jobs, self.spec_of))
        self.driver.run(after_step=self._measure)

    def _measure(self, now: float) -> None:
        """Integrate IPUs in use, and free IPUs no waiting job could use, over the time since the last step."""
        s, dt = self.s, now - self.end
        self.used_ipu_seconds += self._used * dt
        if self.end < self.last_arrival:
            self.arriving_ipu_seconds += self._used * (min(now, self.last_arrival) - self.end)
        self.unusable_waiting += self._unusable * dt
        self.end = now
        table = s.table
        self._used = table.used_mask.bit_count()
        series = self.series
        series.times.append(now)
        series.used.append(self._used)
        series.running.append(len(table.running))
        series.queued.append(len(table.ready_seq))
        smallest = s.smallest_eligible_ipus()
        if smallest is None:
            self._unusable = 0
        else:
            free = s.free_mask
            self._unusable = free.bit_count() - usable_ipus(free, smallest, s.total)
        if self.progress is not None and len(series.times) % PROGRESS_STEPS == 0:
            self._report(now)

    def _report(self, now: float) -> None:
        """How far the replay is, every PROGRESS_EVERY seconds of wall time: an overloaded trace of 100,000s of jobs
        replays for an hour or more (docs/traces.md), and said nothing until it ended."""
        wall = self.timer()
        if wall - self._shown_at < PROGRESS_EVERY:
            return
        self._shown_at = wall
        table = self.s.table
        self.progress(f"{len(table.jobs):,} of {len(self.jobs):,} jobs submitted, {len(table.running):,} running,"
                      f" {len(table.ready_seq):,} queued, {(now - self.jobs[0].submit_time) / 86400:,.1f} days into"
                      " the trace")

    def result(self, policy: str, pod: PodConfig, wall: float | None, threshold: float) -> ReplayRun:
        records = list(self.s.table.jobs.values())
        done = [j for j in records if j.end_time is not None and j.state is not S.PENDING]
        rows = [figures(j, threshold) for j in records]
        ran = [r for r in rows if r.bounded_slowdown is not None]
        bsld = [r.bounded_slowdown for r in ran]
        slowdowns = [r.slowdown for r in ran if r.slowdown is not None]
        jct = [j.end_time - j.submit_time for j in done]
        wait = [j.start_time - j.waiting_since for j in done if j.start_time is not None]
        start = self.jobs[0].submit_time if self.jobs else 0.0
        # to the last job's end, not the last event: a preempted run's end event stays in the heap, and one due an
        # hour after its job was cancelled stretched makespan by that hour and cut utilisation to match
        end = self.end if len(done) < len(self.jobs) else max((j.end_time for j in done), default=start)
        makespan = end - start if self.jobs else None
        arriving = self.last_arrival - start

        def share(ipu_seconds: float, span: float | None) -> float | None:
            """Of the Pod's IPU-seconds over `span`: undefined over no time (jobs of 0 s, all at one moment)."""
            return ipu_seconds / (pod.ipus * span) if span else None

        result = ReplayResult(
            policy=policy, pod=pod.name, jobs=len(self.jobs), finished=len(done),
            unfinished=len(self.jobs) - len(done),
            avg_jct=mean(jct), p50_jct=percentile(jct, 0.5), p95_jct=percentile(jct, 0.95),
            avg_wait=mean(wait), p95_wait=percentile(wait, 0.95), makespan=makespan,
            utilisation=share(self.used_ipu_seconds, makespan),
            arrival_utilisation=share(self.arriving_ipu_seconds, arriving),
            preempted_share=share(preempted_ipu_seconds(records), makespan),
            fragmentation=share(self.unusable_waiting, makespan),
            timeouts=sum(1 for j in done if j.state is S.TIMEOUT), preemptions=self.runs.stopped[S.PREEMPTED],
            cycles=self.driver.cycles,
            wall_seconds=wall, max_wait=max(wait, default=None),
            avg_bsld=mean(bsld), p95_bsld=percentile(bsld, 0.95), max_bsld=max(bsld, default=None),
            avg_slowdown=mean(slowdowns), fairness=user_fairness(ran),
            avg_queue=self.series.average(self.series.queued, end), max_queue=max(self.series.queued, default=None),
            bsld_threshold=threshold,
        )
        # job ids follow submission, and the jobs were submitted in self.jobs' order (the driver keeps equal times
        # in order), so the k-th record is the k-th trace job
        return ReplayRun(result, rows, self.series, records, [j.line for j in self.jobs],
                         [j.trace_wait for j in self.jobs])


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None (undefined) over no values: a 0 would read as measured."""
    return sum(values) / len(values) if values else None


def preempted_ipu_seconds(records: Sequence[Job]) -> float:
    """IPU-seconds held by runs that a preemption ended: counted in utilisation (the IPUs were held, no other job
    could have them), though their work is lost (a requeued job runs again from its start)."""
    lost = 0.0
    for job in records:
        if job.requeue_count or job.state is S.PREEMPTED:
            started = None
            for t in job.history:
                if t.state is S.RUNNING:
                    started = t.at
                elif t.state is S.PREEMPTED and started is not None:
                    lost += (t.at - started) * job.ipus
    return lost


@dataclass(frozen=True)
class ReplayRun:
    """A replay's figures, each job's, and the Pod's state over time."""

    result: ReplayResult
    jobs: list[JobFigures]  # in job id order: the trace's order of submission
    series: Series
    records: list[Job]  # the scheduler's records the figures come from, in the same order
    trace_lines: list[int | None]  # the line of the trace each came from, in the same order
    trace_waits: list[float | None]  # the wait its trace recorded for each (TraceJob.trace_wait), in the same order


def replay(trace_jobs: Sequence[TraceJob], pod: PodConfig, policy: str, config: SchedulerConfig | None = None,
           timer: Callable[[], float] | None = None) -> ReplayResult:
    """replay_run's figures alone."""
    return replay_run(trace_jobs, pod, policy, config, timer).result


def replay_run(trace_jobs: Sequence[TraceJob], pod: PodConfig, policy: str, config: SchedulerConfig | None = None,
               timer: Callable[[], float] | None = None, bsld_threshold: float = BSLD_THRESHOLD,
               policy_file: str | None = None, name: str | None = None,
               progress: Callable[[str], None] | None = None) -> ReplayRun:
    """Replay `trace_jobs` on `pod` under `policy`, or the policy in `policy_file`, called `name` in the result (its
    file's stem unless given); `timer` (e.g. time.perf_counter) measures wall time if given, and with it `progress`
    is told how far the replay is every PROGRESS_EVERY seconds (nothing, for a replay shorter). A policy file's first
    failure stops the replay (PolicyFailed): a live controller would let `policy` decide that cycle, but a replay's
    figures would then be partly another policy's.

    The wall time covers the event loop (every submit, cycle, end and time-limit check), not reading the trace or
    turning its rows into specs. Queueing delay (wait) is the start of a job's last run minus when that wait began
    (Job.waiting_since: its submission or requeue, or its begin time if later), as the live queue-wait histogram
    measures it; JCT is end minus submit, time before a begin time included (arrival to completion)."""
    base = config or SchedulerConfig()
    # Every row of a trace is a submission its cluster accepted, so the queue caps that keep a live controller's
    # memory bounded (MaxJobCount, MaxSubmitJobs) refuse none of them: an overloaded trace (--compress 16, one
    # user's 60,000 jobs at once) stopped halfway with a live user's fix, "wait for some to finish".
    uncapped = {"max_jobs": max(base.max_jobs, len(trace_jobs)), "max_submit_jobs_per_user": None}  # UNCAPPED's
    cfg = SchedulerConfig.model_validate({**base.model_dump(), **uncapped, "policy": policy,
                                          "policy_file": policy_file})
    run = _Replay(trace_jobs, pod, cfg, site=config is not None)
    run.specs()
    chosen = run.s.policy
    if isinstance(chosen, GuardedPolicy):
        chosen.stop_at_failure = True
        policy = name or chosen.loaded.name
    began = timer() if timer else None
    if progress is not None and timer is not None:
        run.progress, run.timer, run._shown_at = (lambda text: progress(f"{policy}: {text}")), timer, began
    # The loop allocates millions of short-lived job records that form no reference cycles, so the cyclic
    # collector's passes are pure overhead (measured at 14-25% of the replay's wall time); reference counting
    # still frees every record.
    collecting = gc.isenabled()
    gc.disable()
    try:
        run.run()
    finally:
        if collecting:
            gc.enable()
    wall = timer() - began if timer and began is not None else None
    return run.result(policy, pod, wall, bsld_threshold)
