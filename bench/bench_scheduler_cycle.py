"""Scheduling-cycle latency with 10,000 pending jobs on a Pod256, and the in-memory cost of a submit.

Run: .venv/bin/python bench/bench_scheduler_cycle.py [--pending N] [--cycles C] [--policies fifo,backfill]
Goals: cycle p99 < 50 ms with 10,000 pending jobs (with estimated starts, as the live server runs it); submit
in memory well under 0.5 ms (the budget for >= 2,000 submissions/s through gRPC). Wall-clock times on this machine.

Each measured cycle follows 30 virtual seconds in which a few running jobs end and a few new jobs arrive, so the
queue stays near N pending and the Pod stays nearly full, as on a busy cluster.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vipu.partition.pod import load_pod  # noqa: E402
from vipu.scheduler.config import SchedulerConfig  # noqa: E402
from vipu.scheduler.scheduler import Scheduler  # noqa: E402
from vipu.scheduler.spec import JobSpec, SleepWorkload  # noqa: E402

SIZES = [1, 1, 2, 4, 4, 4, 8, 8, 16, 32, 64]


def random_spec(rng: random.Random) -> JobSpec:
    limit = rng.choice([600, 1800, 3600, 4 * 3600, 8 * 3600])
    return JobSpec(
        name=f"job{rng.randrange(100)}", ipus=rng.choice(SIZES), time_limit=limit,
        qos=rng.choices(["low", "normal", "high"], [2, 7, 1])[0], user=f"user{rng.randrange(20)}",
        nice=rng.randrange(0, 100), workload=SleepWorkload(duration=limit * rng.uniform(0.2, 1.0)),
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench(policy: str, pending: int, cycles: int, seed: int) -> dict:
    rng = random.Random(seed)
    pod = load_pod("bow-pod256")
    s = Scheduler(pod, SchedulerConfig(policy=policy))
    specs = [random_spec(rng) for _ in range(pending)]
    t0 = time.perf_counter()
    for spec in specs:
        s.submit(spec, 0.0)
    submit_us = (time.perf_counter() - t0) / pending * 1e6
    t0 = time.perf_counter()
    s.cycle(0.0)
    first_ms = (time.perf_counter() - t0) * 1e3
    now, times = 0.0, []
    for _ in range(cycles):
        now += 30.0
        running = sorted(s.table.running)
        for job_id in rng.sample(running, min(len(running), rng.randrange(1, 4))):
            s.job_finished(job_id, now)
        for _ in range(rng.randrange(1, 4)):
            s.submit(random_spec(rng), now)
        s.enforce_time_limits(now)
        t0 = time.perf_counter()
        s.cycle(now)
        times.append((time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter()
    queue = s.queue()
    squeue_ms = (time.perf_counter() - t0) * 1e3
    return {
        "policy": policy, "pending": len(s.table.pending), "running": len(s.table.running),
        "submit_us": submit_us, "first_ms": first_ms, "p50_ms": statistics.median(times),
        "p99_ms": percentile(times, 0.99), "max_ms": max(times), "squeue_ms": squeue_ms, "queue_len": len(queue),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--policies", default="backfill,priority,fifo,sjf")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"scheduling cycle on bow-pod256 with ~{args.pending:,} pending jobs, {args.cycles} cycles per policy"
          " (estimated starts on, max_job_test 100)")
    print(f"{'policy':<9} {'pending':>8} {'running':>8} {'submit us':>10} {'1st cycle ms':>13} {'p50 ms':>8}"
          f" {'p99 ms':>8} {'max ms':>8} {'squeue ms':>10}")
    for policy in args.policies.split(","):
        r = bench(policy, args.pending, args.cycles, args.seed)
        print(f"{r['policy']:<9} {r['pending']:>8,} {r['running']:>8} {r['submit_us']:>10.1f} {r['first_ms']:>13.1f}"
              f" {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['max_ms']:>8.2f} {r['squeue_ms']:>10.1f}")


if __name__ == "__main__":
    main()
