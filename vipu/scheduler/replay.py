"""Trace replay in virtual time: the live scheduling code, driven by an event heap instead of the wall clock.

Why the same Scheduler and policies as the server, with a VirtualClock and NoJournal: a replay's numbers are worth
something only if they come from the code that schedules real jobs. Events are kept in one heap keyed by
(time, sequence), so equal times are processed in a fixed order and a replay is exactly repeatable. At each event
time: arrivals are submitted, ended workloads reported, time limits enforced, then one scheduling cycle runs, with
estimated starts off since nobody reads them (a property test checks that this changes no start). A job's begin time
(a trace's `begin` column) is an event too: the loop wakes at the earliest one still to come, as the live dispatcher
does, so the job starts when it becomes eligible, not at the next unrelated event. Wall-clock time is only measured
through a `timer` the caller passes in.
"""

from __future__ import annotations

import gc
import heapq
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from pydantic import ValidationError

from vipu.clock import VirtualClock
from vipu.errors import InvalidArgument, VipuError
from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.partition.state import NoJournal
from vipu.scheduler.bits import usable_ipus
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.effects import StartJob
from vipu.scheduler.policies import POLICIES
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.spec import JobSpec, SleepWorkload
from vipu.scheduler.states import JobState
from vipu.scheduler.submit import resolve
from vipu.scheduler.traces import Trace, TraceJob, load_trace
from vipu.validation import describe

S = JobState


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    pod: str
    jobs: int
    finished: int
    unfinished: int
    avg_jct: float
    p50_jct: float
    p95_jct: float
    avg_wait: float
    p95_wait: float
    makespan: float
    utilisation: float  # IPU-seconds of running jobs / (Pod IPUs x makespan)
    fragmentation: float  # share of the Pod's IPU-seconds that were free while jobs waited, yet too scattered for
    # the smallest waiting job that could start (free IPUs outside any free aligned block of its size; a job held,
    # not yet begun or waiting on a dependency could use none of them)
    timeouts: int
    preemptions: int
    cycles: int
    wall_seconds: float | None = None
    max_wait: float = 0.0  # the longest wait: starvation shows here first

    @property
    def jobs_per_second(self) -> float | None:
        return self.jobs / self.wall_seconds if self.wall_seconds else None


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Replay:
    def __init__(self, jobs: Sequence[TraceJob], pod: PodConfig, config: SchedulerConfig, site: bool = False):
        self.site = site  # the config is a site's (--scheduler-config), not the defaults
        self.jobs = sorted(jobs, key=lambda j: j.submit_time)  # stable: equal times keep trace order
        self.clock = VirtualClock(self.jobs[0].submit_time if self.jobs else 0.0)
        self.s = Scheduler(pod, config, NoJournal())
        self.heap: list[tuple[float, int, int, float, bool]] = []  # (time, seq, job id, run start, is time limit)
        self.seq = 0
        self.used_ipu_seconds = 0.0
        self.unusable_waiting = 0.0  # integral of free IPUs outside every block the smallest eligible job could use
        self.preemptions = 0
        self.cycles = 0

    def _push(self, at: float, job_id: int, start: float, limit: bool) -> None:
        heapq.heappush(self.heap, (at, self.seq, job_id, start, limit))
        self.seq += 1

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
        s, heap, specs = self.s, self.heap, self.spec_of
        table, total, clock = s.table, s.total, self.clock
        arrivals = [j.submit_time for j in self.jobs]
        count, nxt = len(arrivals), 0
        inf = math.inf
        last = clock.now()
        used, unusable = 0, 0  # IPUs in use, and free IPUs no waiting job could use, since `last`
        while nxt < count or heap or table.begins:  # begins: (begin time, id) of jobs not yet eligible
            now = arrivals[nxt] if nxt < count else inf
            if heap and heap[0][0] < now:
                now = heap[0][0]
            begins = table.begins
            if begins and begins[0][0] < now:
                now = begins[0][0]
            dt = now - last
            self.used_ipu_seconds += used * dt
            self.unusable_waiting += unusable * dt
            clock.advance_to(now)
            last = now
            while nxt < count and arrivals[nxt] == now:
                s.submit(specs[nxt], now)
                nxt += 1
            while heap and heap[0][0] == now:
                _, _, job_id, start, limit = heapq.heappop(heap)
                if not limit and table.running_since(job_id, start):
                    s.job_finished(job_id, now, exit_code=0)
            s.enforce_time_limits(now)
            effects = s.cycle(now, estimates=False)
            if effects:
                self._effects(effects)
            self.cycles += 1
            used = table.used_mask.bit_count()
            smallest = s.smallest_eligible_ipus()
            if smallest is None:
                unusable = 0
            else:
                free = s.free_mask
                unusable = free.bit_count() - usable_ipus(free, smallest, total)
        self.end = last

    def _effects(self, effects) -> None:
        for e in effects:
            if type(e) is StartJob:
                run = e.workload.duration  # replayed jobs sleep for their traced run time
                if run <= e.end_by - e.start_time:
                    self._push(e.start_time + run, e.job_id, e.start_time, False)
                else:
                    self._push(e.end_by, e.job_id, e.start_time, True)
            elif e.state is S.PREEMPTED:
                self.preemptions += 1

    def result(self, policy: str, pod: PodConfig, wall: float | None) -> ReplayResult:
        done = [j for j in self.s.table.jobs.values() if j.end_time is not None and j.state is not S.PENDING]
        jct = [j.end_time - j.submit_time for j in done]
        wait = [j.start_time - j.waiting_since for j in done if j.start_time is not None]
        start = self.jobs[0].submit_time if self.jobs else 0.0
        # to the last job's end, not the last event: a preempted run's end event stays in the heap, and one due an
        # hour after its job was cancelled stretched makespan by that hour and cut utilisation to match
        end = self.end if len(done) < len(self.jobs) else max((j.end_time for j in done), default=start)
        makespan = (end - start) if self.jobs else 0.0
        return ReplayResult(
            policy=policy, pod=pod.name, jobs=len(self.jobs), finished=len(done),
            unfinished=len(self.jobs) - len(done),
            avg_jct=sum(jct) / len(jct) if jct else 0.0, p50_jct=_percentile(jct, 0.5), p95_jct=_percentile(jct, 0.95),
            avg_wait=sum(wait) / len(wait) if wait else 0.0, p95_wait=_percentile(wait, 0.95), makespan=makespan,
            utilisation=self.used_ipu_seconds / (pod.ipus * makespan) if makespan > 0 else 0.0,
            fragmentation=self.unusable_waiting / (pod.ipus * makespan) if makespan > 0 else 0.0,
            timeouts=sum(1 for j in done if j.state is S.TIMEOUT), preemptions=self.preemptions, cycles=self.cycles,
            wall_seconds=wall, max_wait=max(wait, default=0.0),
        )


def replay(trace_jobs: Sequence[TraceJob], pod: PodConfig, policy: str, config: SchedulerConfig | None = None,
           timer: Callable[[], float] | None = None) -> ReplayResult:
    """Replay `trace_jobs` on `pod` under `policy`; `timer` (e.g. time.perf_counter) measures wall time if given.

    The wall time covers the event loop (every submit, cycle, end and time-limit check), not reading the trace or
    turning its rows into specs. Queueing delay (wait) is the start of a job's last run minus when that wait began
    (Job.waiting_since: its submission or requeue, or its begin time if later), as the live queue-wait histogram
    measures it; JCT is end minus submit, time before a begin time included (arrival to completion)."""
    base = config or SchedulerConfig()
    cfg = SchedulerConfig.model_validate({**base.model_dump(), "policy": policy})
    run = _Replay(trace_jobs, pod, cfg, site=config is not None)
    run.specs()
    began = timer() if timer else None
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
    return run.result(policy, pod, wall)


COLUMNS = (
    ("policy", "{:<9}", lambda r: r.policy),
    ("jobs", "{:>6}", lambda r: r.jobs),
    ("done", "{:>6}", lambda r: r.finished),
    ("avg JCT s", "{:>10.0f}", lambda r: r.avg_jct),
    ("p50 JCT s", "{:>10.0f}", lambda r: r.p50_jct),
    ("p95 JCT s", "{:>10.0f}", lambda r: r.p95_jct),
    ("avg wait s", "{:>10.0f}", lambda r: r.avg_wait),
    ("p95 wait s", "{:>10.0f}", lambda r: r.p95_wait),
    ("max wait s", "{:>10.0f}", lambda r: r.max_wait),
    ("makespan s", "{:>11.0f}", lambda r: r.makespan),
    ("util", "{:>6.1%}", lambda r: r.utilisation),
    ("frag", "{:>6.1%}", lambda r: r.fragmentation),
    ("preempt", "{:>7}", lambda r: r.preemptions),
    ("jobs/s", "{:>8}", lambda r: f"{r.jobs_per_second:,.0f}" if r.jobs_per_second else "-"),
)


def format_table(results: Sequence[ReplayResult]) -> str:
    """The per-policy table a replay prints."""
    rows = [[fmt.format(get(r)) for _, fmt, get in COLUMNS] for r in results]
    widths = [max(len(name), *(len(row[i]) for row in rows)) if rows else len(name)
              for i, (name, _, _) in enumerate(COLUMNS)]
    lines = ["  ".join(name.rjust(w) if i else name.ljust(w) for i, ((name, _, _), w) in enumerate(zip(COLUMNS, widths)))]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def result_json(r: ReplayResult, sim: "Simulation | None" = None) -> dict:
    """One policy's figures for scripts: the table's, unrounded, with units in the key names; given the
    Simulation, also what the text output states on its first two lines (trace, skipped rows, mapping)."""
    out: dict = {"trace": sim.trace_path, "compress": sim.compression} if sim is not None else {}
    out.update({
        "policy": r.policy, "pod": r.pod, "jobs": r.jobs, "done": r.finished, "unfinished": r.unfinished,
        "avg_jct_s": r.avg_jct, "p50_jct_s": r.p50_jct, "p95_jct_s": r.p95_jct, "avg_wait_s": r.avg_wait,
        "p95_wait_s": r.p95_wait, "max_wait_s": r.max_wait, "makespan_s": r.makespan,
        "util_percent": 100 * r.utilisation, "frag_percent": 100 * r.fragmentation, "preemptions": r.preemptions,
        "timeouts": r.timeouts, "jobs_per_s": r.jobs_per_second,
    })
    if sim is not None:
        out["skipped"] = dict(sorted(sim.trace.skipped.items()))
        out["mapping"] = sim.trace.mapping
    return out


@dataclass(frozen=True)
class Simulation:
    trace: Trace
    pod: PodConfig
    results: list[ReplayResult]  # one per policy, in the order asked for
    trace_path: str = ""
    compression: float = 1.0


def simulate_trace(trace_path: str, pod_name: str, policies: list[str], timer: Callable[[], float] | None = None,
                   config: SchedulerConfig | None = None, repeat: int = 1, **trace_options) -> Simulation:
    """Replay the trace at `trace_path` on a Pod under each policy.

    `timer` defaults to the wall clock (vipu.clock), which is where jobs/s comes from; with `repeat` > 1 each policy
    is replayed that many times (the results are identical) and the fastest run's jobs/s is kept, which is what a
    machine shared with other work can sustain."""
    names = ", ".join(sorted(POLICIES))
    if not policies:
        raise InvalidArgument(f"--policy names no policy; use one or more of {names}")
    for policy in policies:
        if policy not in POLICIES:
            raise InvalidArgument(f"--policy {policy!r} is not a policy; use one or more of {names} (repeat --policy"
                                  " or separate the names with commas)")
    if timer is None:
        from vipu.clock import WallClock

        timer = WallClock().now
    pod = load_pod(pod_name)
    trace = load_trace(trace_path, max_ipus=pod.max_partition_ipus, **trace_options)
    results = [min((replay(trace.jobs, pod, policy, config, timer) for _ in range(max(1, repeat))),
                   key=lambda r: r.wall_seconds or 0.0) for policy in policies]
    return Simulation(trace, pod, results, str(trace_path), trace_options.get("compression", 1.0))


def main_replay(trace_path: str, pod_name: str, policies: list[str], timer: Callable[[], float] | None = None,
                config: SchedulerConfig | None = None, repeat: int = 1, **trace_options) -> str:
    """The report `vipu simulate` prints: the mapping, what was skipped, and one row per policy (simulate_trace
    says what the arguments do)."""
    sim = simulate_trace(trace_path, pod_name, policies, timer, config, repeat, **trace_options)
    return "\n".join([
        f"trace {trace_path} on {sim.pod.name} ({sim.pod.ipus} IPUs): {len(sim.trace.jobs)} jobs replayed; skipped:"
        f" {sim.trace.skipped_text()}",
        sim.trace.mapping,
        "JCT = end - submit; wait = last start - the later of last queued (submit or requeue) and begin;"
        " util = IPU-seconds used / (IPUs x makespan);"
        " frag = share of the Pod's IPU-seconds that were free while jobs waited but lay outside every free aligned"
        " block of the smallest waiting job's size",
        format_table(sim.results),
    ])
