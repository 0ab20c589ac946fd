"""One scheduling cycle, the same work each time, run again and again: how far this machine's CPU time for it
spreads. Why: the scale goal (bench_scheduler_cycle.py --scale-only: p99 < 100 ms) is a p99 over 300 cycles, which is
the third slowest; on 65,536 IPUs under sjf the slowest are the waves (thousands of jobs reach their time limits
together and as many start) and the cycles right after them (which evict hundreds). A p99 near the goal then says
as much about the machine as about the code.

Run: .venv/bin/python bench/bench_cycle_spread.py [--scale POD:N] [--policy sjf] [--repeat 15]
It runs bench_scheduler_cycle's scale workload (bench_cycle_pairs.scale_workload) up to its first wave (a cycle that
starts 500 jobs or more), keeps a copy of the state before that cycle and before the next, and runs each copy
--repeat times in this process, each from a fresh copy (pickle), with the cycle collector as the workload has it.
Every run must decide the same (decisions() of bench_scheduler_cycle.py); it prints the CPU ms of each run, then the
fastest, the median and the slowest, and the slowest over the fastest.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cycle_pairs import WAVE, scale_workload  # noqa: E402
from bench.bench_scheduler_cycle import decisions  # noqa: E402
from vipu.scheduler.effects import StartJob, StopJob  # noqa: E402

MAX_CYCLES = 300  # the scale table's cycles: a workload with no wave in them has none to measure


def heavy_states(where: str, pending: int, policy: str) -> list[tuple[int, bytes]]:
    """(cycle, its state pickled before it) of the first wave and of the cycle after it."""
    kept: list[tuple[int, bytes]] = []
    workload = scale_workload(where, pending, policy)
    for cycle in range(MAX_CYCLES):
        s, now = next(workload)
        state = pickle.dumps((s, now), protocol=5)
        effects = s.cycle(now)
        if kept or sum(isinstance(e, StartJob) for e in effects) >= WAVE:
            kept.append((cycle, state))
            if len(kept) == 2:
                return kept
    raise SystemExit(f"no cycle of the first {MAX_CYCLES} started {WAVE} jobs: nothing to measure")


def spread(state: bytes, repeat: int) -> tuple[list[float], set[str], dict[str, int]]:
    """CPU ms of each run of the cycle, the hashes of what they decided, and what the first one did."""
    times, hashes, did = [], set(), {}
    for _ in range(repeat):
        s, now = pickle.loads(state)
        c0 = time.process_time()
        effects = s.cycle(now)
        times.append((time.process_time() - c0) * 1e3)
        hashes.add(decisions(s, effects))
        did = did or {"starts": sum(isinstance(e, StartJob) for e in effects),
                      "evictions": sum(isinstance(e, StopJob) for e in effects)}
        del s, effects
    return times, hashes, did


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default=f"{ROOT / 'examples/pods/pod65536.yaml'}:10000")
    parser.add_argument("--policy", default="sjf")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    where, pending = args.scale.rsplit(":", 1)
    print(f"bench_cycle_spread: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC on {os.uname().nodename},"
          f" {os.cpu_count()} cores, Python {sys.version.split()[0]}; {Path(where).stem} with {int(pending):,}"
          f" pending, {args.policy}; load average {os.getloadavg()[0]:.1f} at the start")
    for cycle, state in heavy_states(where, int(pending), args.policy):
        times, hashes, did = spread(state, args.repeat)
        if len(hashes) != 1:
            raise SystemExit(f"cycle {cycle} decided differently in two runs: a bug, not noise")
        fastest, slowest = min(times), max(times)
        print(f"cycle {cycle} ({did['starts']:,} starts, {did['evictions']:,} evictions), CPU ms of {args.repeat}"
              f" runs: {' '.join(f'{t:.0f}' for t in times)}")
        print(f"  fastest {fastest:.1f}, median {statistics.median(times):.1f}, slowest {slowest:.1f}:"
              f" slowest / fastest {slowest / fastest:.2f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
