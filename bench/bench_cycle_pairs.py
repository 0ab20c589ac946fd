"""The scale workload of bench_scheduler_cycle.py on this code and on an earlier commit, in turn, cycle by cycle:
the CPU time of each cycle on both, and their ratio, measured under the same load.

Run: .venv/bin/python bench/bench_cycle_pairs.py --against COMMIT [--scale POD:N] [--policies sjf,backfill]
         [--cycles C]
Why: on a machine shared with other work one run's p99 moves by a third with the load of the moment, more than a
change to the walk saves; two processes that take turns, a cycle each, see the same load, so their ratio holds.
The earlier commit is taken out of git (git archive) into a temporary directory; both use this checkout's Python.
The next two columns are the same sum and ratio over the waves alone: the cycles that started 500 jobs or more (jobs
started together reach their time limits together), most of whose cost is the commit of their starts; the last, the
minor page faults of a wave, on average (pages of memory the process had to be given while it ran).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAVE = 500  # a cycle that starts this many jobs or more: the jobs started together reach their limits together


def scale_workload(where: str, pending: int, policy: str, seed: int = 1):
    """bench_scheduler_cycle.bench()'s scale workload: fill the Pod, freeze what lives (keep_long_lived), then yield
    (scheduler, now) before each cycle, the cycle not run yet. The caller runs it (so it may time or copy it)."""
    from bench.bench_scheduler_cycle import expire, random_spec
    from vipu.control.long_lived import keep_long_lived
    from vipu.hardware.pod_files import load_pod
    from vipu.scheduler.config import SchedulerConfig
    from vipu.scheduler.scheduler import Scheduler

    rng = random.Random(seed)
    s = Scheduler(load_pod(where), SchedulerConfig(policy=policy))
    for _ in range(pending):
        s.submit(random_spec(rng), 0.0)
    s.cycle(0.0)
    while len(s.table.pending) < pending:
        for _ in range(pending - len(s.table.pending)):
            s.submit(random_spec(rng), 0.0)
        s.cycle(0.0)
    keep_long_lived()
    now = 0.0
    while True:
        now += 30.0
        running = sorted(s.table.running)
        for job_id in rng.sample(running, min(len(running), rng.randrange(1, 4))):
            s.job_finished(job_id, now)
        for _ in range(max(rng.randrange(1, 4), pending - len(s.table.pending))):
            s.submit(random_spec(rng), now)
        expire(s, now)
        yield s, now


def child(tree: str, where: str, pending: int, policy: str) -> None:
    """One side: one cycle of scale_workload() per line read; print its CPU ms, its starts and its page faults."""
    sys.path.insert(0, tree)
    from vipu.scheduler.effects import StartJob

    workload = scale_workload(where, pending, policy)
    s, now = next(workload)  # (the Pod filled)
    print("ready", flush=True)
    for _ in sys.stdin:
        f0, c0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
        effects = s.cycle(now)
        ms, faults = (time.process_time() - c0) * 1e3, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        print(ms, sum(isinstance(e, StartJob) for e in effects), faults, flush=True)
        s, now = next(workload)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pair(trees: dict[str, str], where: str, pending: int, policy: str, cycles: int) -> dict[str, list[float]]:
    """CPU ms of each cycle on each tree, the two taking turns (who goes first alternates); under "starts", how
    many jobs each cycle started (the same on both: a change meant to make cycles cheaper decides the same); under
    "faults <tree>", each cycle's minor page faults."""
    procs = {name: subprocess.Popen([sys.executable, __file__, "--child", tree, where, str(pending), policy],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree)
             for name, tree in trees.items()}
    for p in procs.values():
        if p.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise SystemExit("a side failed to fill its Pod (its error is above)")
    times: dict[str, list[float]] = {name: [] for name in [*trees, "starts", *(f"faults {t}" for t in trees)]}
    names = list(trees)
    for i in range(cycles):
        for name in names if i % 2 == 0 else names[::-1]:
            p = procs[name]
            p.stdin.write("go\n")  # type: ignore[union-attr]
            p.stdin.flush()  # type: ignore[union-attr]
            ms, starts, faults = p.stdout.readline().split()  # type: ignore[union-attr]
            times[name].append(float(ms))
            times[f"faults {name}"].append(float(faults))
        times["starts"].append(float(starts))
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the earlier commit (anything git rev-parse takes)")
    parser.add_argument("--scale", default=f"{ROOT / 'examples/pods/pod65536.yaml'}:10000")
    parser.add_argument("--policies", default="sjf,backfill")
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--child", nargs=4, metavar=("TREE", "POD", "PENDING", "POLICY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tree, where, pending, policy = args.child
        return child(tree, where, int(pending), policy)
    if not args.against:
        parser.error("--against COMMIT is required: the code to compare this checkout with")
    where, pending = args.scale.rsplit(":", 1)
    with tempfile.TemporaryDirectory() as before:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against, "vipu", "bench"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", before], input=archive, check=True)
        trees = {"this": str(ROOT), args.against: before}
        print(f"{Path(where).stem} with {int(pending):,} pending, {args.cycles} cycles, this code and {args.against}"
              f" in turn; CPU ms per cycle; load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'policy':<9} {'code':<10} {'p50':>7} {'p99':>7} {'max':>7} {'sum s':>7} {'ratio':>6}"
              f" {'waves s':>8} {'ratio':>6} {'wave faults':>12}")
        for policy in args.policies.split(","):
            times = pair(trees, where, int(pending), policy, args.cycles)
            starts = times.pop("starts")
            faults = {name: times.pop(f"faults {name}") for name in trees}
            waves = [i for i, n in enumerate(starts) if n >= WAVE]
            base, base_waves = sum(times[args.against]), sum(times[args.against][i] for i in waves) or 1.0
            for name, v in times.items():
                in_waves = sum(v[i] for i in waves)
                wave_faults = sum(faults[name][i] for i in waves) / max(1, len(waves))
                print(f"{policy:<9} {name:<10} {statistics.median(v):>7.1f} {percentile(v, 0.99):>7.1f}"
                      f" {max(v):>7.1f} {sum(v) / 1e3:>7.2f} {sum(v) / base:>6.2f} {in_waves / 1e3:>8.2f}"
                      f" {in_waves / base_waves:>6.2f} {wave_faults:>12,.0f}", flush=True)
            print(f"{policy:<9} waves: {len(waves)} cycles started {WAVE:,} jobs or more,"
                  f" {int(sum(starts[i] for i in waves)):,} in all", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; ratio: the sum of a code's cycles over the earlier"
          f" commit's; waves: the same over the cycles that started {WAVE:,} jobs or more (their commit is most of"
          " their cost); wave faults: minor page faults per wave, on average")


if __name__ == "__main__":
    main()
