"""Replays the whole openb trace (Alibaba GPU cluster, 8,152 tasks) on a Pod256 under every policy, in virtual time.

Run: .venv/bin/python bench/bench_replay.py [--pod bow-pod256] [--policies fifo,priority,backfill,sjf] [--repeat N]
Goal: >= 20,000 jobs replayed per wall-clock second. Prints the GPU-to-IPU mapping with the results, once with
the trace's own arrival times and once with arrivals 4x compressed (4x the load), where the policies differ.
--repeat N replays each policy N times and shows the fastest (on a machine shared with other work a single run's
wall time varies by half); the result tables are the same whatever N.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vipu.scheduler.replay import main_replay  # noqa: E402

TRACE = str(Path(__file__).resolve().parents[2] / "shared" / "traces" / "openb_pod_list_default.csv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=TRACE)
    parser.add_argument("--pod", default="bow-pod256")
    parser.add_argument("--policies", default="fifo,priority,backfill,sjf")
    parser.add_argument("--compressions", default="1,4", help="arrival-time compression factors to run")
    parser.add_argument("--repeat", type=int, default=3, help="replays per policy; the fastest is shown")
    args = parser.parse_args()
    for compression in (float(c) for c in args.compressions.split(",")):
        t0 = time.perf_counter()
        print(main_replay(args.trace, args.pod, args.policies.split(","), timer=time.perf_counter,
                          repeat=args.repeat, compression=compression))
        print(f"(whole run incl. reading the trace: {time.perf_counter() - t0:.1f} s wall)\n")


if __name__ == "__main__":
    main()
