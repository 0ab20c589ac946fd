"""`vipu simulate`: a trace (read, or generated, its times drawn if asked) replayed under each policy and policy
file, once or over several seeds, and the report it prints."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.replay.arrivals import Draws, drawn, runtime_kind
from vipu.replay.generated_trace import IPUS_PER_GPU, generated_trace
from vipu.replay.measures import BSLD_THRESHOLD
from vipu.replay.run import UNCAPPED, ReplayRun, replay_run
from vipu.replay.summary import PAPER_COLUMNS, ReplayResult, format_table, paired_table, trace_waits
from vipu.replay.trace_rows import Trace
from vipu.replay.traces import (check_compression, check_ipus_per_gpu, check_limit_factor, compressed, load_trace,
                                 with_limits)
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.policies import POLICIES
from vipu.scheduler.policies.policy_file import PolicyFile, load_policy_file

MAX_SEEDS = 1000


@dataclass(frozen=True)
class Simulation:
    trace: Trace  # the first seed's
    pod: PodConfig
    results: list[ReplayResult]  # the first seed's, one per policy, in the order asked for (policy files last)
    trace_path: str = ""
    compression: float = 1.0
    runs: list[list[ReplayRun]] = field(default_factory=list)  # [policy][seed]
    seeds: list[int | None] = field(default_factory=lambda: [None])  # None: the replay drew nothing at random
    config_file: str = ""  # --scheduler-config's path; "" for the built-in config
    config_changes: dict = field(default_factory=dict)  # that file's fields not at their defaults, so that the
    # results of two configs cannot be taken for each other

    @property
    def random(self) -> bool:
        return self.seeds != [None]


def _check(policies: Sequence[str], policy_files: Sequence[str], seeds: int, bsld_threshold: float) -> None:
    names = ", ".join(sorted(POLICIES))
    if not policies and not policy_files:
        raise InvalidArgument(f"--policy names no policy; use one or more of {names}, or --policy-file FILE")
    for policy in policies:
        if policy not in POLICIES:
            raise InvalidArgument(f"--policy {policy!r} is not a policy; use one or more of {names} (repeat --policy"
                                  " or separate the names with commas)")
    twice = [policy for policy, n in Counter(policies).items() if n > 1]
    if twice:  # its rows, in the table and the files, could not be told apart
        raise InvalidArgument(f"--policy {twice[0]} is given twice; give each policy once")
    if not 1 <= seeds <= MAX_SEEDS:
        raise InvalidArgument(f"--seeds is {seeds}; give 1 to {MAX_SEEDS} (replays per policy, seed, seed + 1, ...)")
    if not bsld_threshold > 0 or bsld_threshold == float("inf"):
        raise InvalidArgument(f"--bsld-threshold is {bsld_threshold}; give seconds, more than 0 (10 is usual)")


def file_policy_names(paths: Sequence[str], files: Sequence[PolicyFile]) -> list[str]:
    """What each policy file's rows are called in the tables, --json, --jobs-out and --plot: its file's stem
    (smallest_first.py: smallest_first), or the path as given when that stem is a built-in policy's name
    (backfill.py) or another file's (a/x.py and b/x.py); one file given twice is refused."""
    where: dict[str, str] = {}
    for path, file in zip(paths, files):
        if file.path in where:
            raise InvalidArgument(f"--policy-file {path}: the same file as --policy-file {where[file.path]}; give"
                                  " each file once")
        where[file.path] = path
    stems = Counter(file.name for file in files)
    names = [path if stems[file.name] > 1 or file.name in POLICIES else file.name
             for path, file in zip(paths, files)]
    clash = next((name for name in names if names.count(name) > 1), None)
    if clash is not None:  # a path that is another file's stem (backfill.py beside backfill.py.py)
        raise InvalidArgument(f"--policy-file: two policies would both be called {clash!r}; rename one of the files")
    return names


def simulate_trace(trace_path: str | None, pod_name: str, policies: list[str],
                   timer: Callable[[], float] | None = None, config: SchedulerConfig | None = None, repeat: int = 1,
                   *, policy_files: Sequence[str] = (), synthetic: int | None = None, draws: Draws = Draws(),
                   seed: int | None = None, seeds: int = 1, bsld_threshold: float = BSLD_THRESHOLD,
                   swf_ipus: str = "next-pow2", config_file: str = "", ipus_per_gpu: int | None = None,
                   progress: Callable[[str], None] | None = None, limit_factor: float | None = None,
                   **trace_options) -> Simulation:
    """Replay the trace at `trace_path` (or `synthetic` jobs generated from the seed) on a Pod under each policy
    and policy file.

    `timer` defaults to the wall clock (vipu.clock), which is where jobs/s comes from; with `repeat` > 1 each policy
    is replayed that many times (the results are identical) and the fastest run's jobs/s is kept, which is what a
    machine shared with other work can sustain. A replay with something drawn at random (`synthetic`, `draws`) runs
    once per seed from `seed` (1 unless given) to `seed + seeds - 1`; a seed given to a replay that draws nothing
    is refused. `fallback` of a policy file is `config`'s policy; `config_file` is where `config` was read from;
    `ipus_per_gpu` a GPU trace's (or the generated one's) IPUs per GPU, 4 unless given; `progress` is told how far
    a replay that takes long is (replay_run); `limit_factor` sets every job's time limit to that many times its run
    time (traces.with_limits)."""
    _check(policies, policy_files, seeds, bsld_threshold)
    draws.check(generated=synthetic is not None)
    if limit_factor is not None:
        check_limit_factor(limit_factor)
    loaded = [load_policy_file(path) for path in policy_files]  # refused now, with file and line
    names = file_policy_names(policy_files, loaded)
    if timer is None:
        from vipu.clock import WallClock

        timer = WallClock().now
    pod = load_pod(pod_name)
    compression = trace_options.get("compression", 1.0)
    if synthetic is not None:
        check_compression(compression)
        if trace_path is not None:
            raise InvalidArgument("--trace and --synthetic both name the jobs to replay; give one")
        if synthetic < 1:
            raise InvalidArgument(f"--synthetic is {synthetic}; give how many jobs to generate, 1 or more")
        if draws.runtimes is not None or draws.arrivals is not None:
            raise InvalidArgument("--synthetic draws its own arrivals and run times; --load sets its load")
        if ipus_per_gpu is not None:
            check_ipus_per_gpu(ipus_per_gpu)
        random = True
    elif trace_path is None:
        raise InvalidArgument("give --trace FILE (docs/traces.md) or --synthetic N (a generated GPU-cluster-like trace)")
    else:
        column = draws.runtimes if draws.runtimes is not None and runtime_kind(draws.runtimes) == "column" else None
        base = load_trace(trace_path, max_ipus=pod.max_partition_ipus, pod_ipus=pod.ipus, swf_ipus=swf_ipus,
                          runtime_column=column, ipus_per_gpu=ipus_per_gpu, **trace_options)
        random = draws.random
    for flag, value in (("--seeds", seeds if seeds > 1 else None), ("--seed", seed)):
        if value is not None and not random:
            raise InvalidArgument(f"{flag} {value}: this replay draws nothing at random (the trace's own times), so no"
                                  " seed changes it; seeds draw --arrivals poisson, --runtimes from a distribution"
                                  f" or a file, and --synthetic N's jobs: give one of those, or drop {flag}")
    seed = 1 if seed is None else seed
    fallback = (config or SchedulerConfig()).policy
    choices = [(policy, None, None) for policy in policies] + \
        [(fallback, file.path, name) for file, name in zip(loaded, names)]
    runs: list[list[ReplayRun]] = [[] for _ in choices]
    order = list(range(seed, seed + seeds)) if random else [None]
    traces = []
    for s in order:
        if synthetic is not None:
            trace = compressed(generated_trace(synthetic, s, pod.ipus, pod.max_partition_ipus, draws.load or 0.8,
                                               ipus_per_gpu or IPUS_PER_GPU), compression)
            if not trace.jobs:  # as load_trace refuses a file with none: all-undefined figures are no result
                raise InvalidArgument(f"--synthetic {synthetic}: seed {s} generated no job that fits {pod.name}"
                                      f" (skipped: {trace.skipped_text()}); give more jobs, a larger --pod or"
                                      " another --seed")
        else:
            trace = drawn(base, draws, s or 0, pod.ipus) if random or base.missing else base
        trace = with_limits(trace, limit_factor)
        traces.append(trace)
        for i, (policy, path, name) in enumerate(choices):
            runs[i].append(min((replay_run(trace.jobs, pod, policy, config, timer, bsld_threshold, path, name,
                                           progress) for _ in range(max(1, repeat))),
                               key=lambda r: r.result.wall_seconds or 0.0))
    # the queue caps a replay does not apply are no change its figures owe anything to
    changes = {k: v for k, v in config.model_dump(mode="json", exclude_defaults=True).items()
               if k not in UNCAPPED} if config is not None and config_file else {}
    return Simulation(traces[0], pod, [r[0].result for r in runs], str(trace_path or ""),
                      compression, runs, order, config_file, changes)


DEFINITIONS = (
    "JCT = end - submit; wait = last start - the later of last queued (submit or requeue) and begin;"
    " util = IPU-seconds used (preempted runs included) / (IPUs x makespan); arr util = the same from the first"
    " submission to the last, before the drain;"
    " frag = share of the Pod's IPU-seconds that were free while jobs waited but lay outside every free aligned"
    " block of the smallest waiting job's size; bsld = max(1, (end - eligible) / max(run, {threshold:g} s)),"
    " slowdown = (end - eligible) / run (none for a run of 0 s), fairness = Jain's index of users' mean bsld,"
    " queue = jobs waiting that may run, averaged over the makespan; - : undefined (over no job, or no time)"
)


def counted(n: int, noun: str) -> str:
    """`1 job`, `3 jobs`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def config_text(sim: Simulation) -> str:
    """The line that says which scheduler config the figures come from: its file and what it changes."""
    changes = json.dumps(sim.config_changes) if sim.config_changes else "none"
    return f"scheduler config {sim.config_file}; its fields not at their defaults (docs/job-spec.md): {changes}"


def recorded_text(sim: Simulation) -> str:
    """The line that gives the waits the trace recorded, on its own cluster, beside which the replay's are read."""
    w = trace_waits(sim.trace.jobs) or {}
    return (f"the trace's own schedule, on its own cluster (not this Pod): {w['jobs']:,} of {len(sim.trace.jobs):,}"
            f" jobs with a recorded start; wait avg {w['avg_wait_s']:,.0f} s, p95 {w['p95_wait_s']:,.0f} s, max"
            f" {w['max_wait_s']:,.0f} s (--jobs-out: trace_wait_s)")


def report(sim: Simulation) -> str:
    """What `vipu simulate` prints: the trace and what was skipped, the mapping, a site's scheduler config, the
    definitions, and two tables with a row per policy (over seeds: mean±95% confidence half-width)."""
    where = f"trace {sim.trace_path}" if sim.trace_path else "a generated trace"
    lines = [
        f"{where} on {sim.pod.name} ({sim.pod.ipus} IPUs): {counted(len(sim.trace.jobs), 'job')} replayed; skipped:"
        f" {sim.trace.skipped_text()}",
        sim.trace.mapping,
        *([config_text(sim)] if sim.config_file else []),
        *([recorded_text(sim)] if trace_waits(sim.trace.jobs) else []),
        DEFINITIONS.format(threshold=sim.results[0].bsld_threshold if sim.results else BSLD_THRESHOLD),
    ]
    if len(sim.seeds) > 1:
        lines.append(f"over {len(sim.seeds)} seeds ({sim.seeds[0]}..{sim.seeds[-1]}; the mapping is the first's):"
                     " each figure is the mean ± its 95% confidence half-width (Student's t)")
    groups = [[run.result for run in per_policy] for per_policy in sim.runs]
    lines += [format_table(groups), "", format_table(groups, PAPER_COLUMNS)]
    if len(sim.seeds) > 1 and len(groups) > 1:
        lines += ["", f"paired over the seeds: each policy's figure minus {groups[0][0].policy}'s in the same seed,"
                  " mean ± its 95% confidence half-width", paired_table(groups)]
    return "\n".join(lines)


def main_replay(trace_path: str | None, pod_name: str, policies: list[str], timer: Callable[[], float] | None = None,
                config: SchedulerConfig | None = None, repeat: int = 1, **options) -> str:
    """The report of simulate_trace's replays (simulate_trace says what the arguments do)."""
    return report(simulate_trace(trace_path, pod_name, policies, timer, config, repeat, **options))
