"""Replays the whole openb trace (Alibaba GPU cluster, 8,152 tasks) on a Pod256 under every policy, in virtual time.

Run: .venv/bin/python bench/bench_replay.py [--pod bow-pod256] [--policies fifo,priority,backfill,sjf] [--repeat N]
Goal: >= 20,000 jobs replayed per wall-clock second. Prints the GPU-to-IPU mapping with the results, once with
the trace's own arrival times and once with arrivals 4x compressed (4x the load), where the policies differ.
--repeat N replays each policy N times and shows the fastest (on a machine shared with other work a single run's
wall time varies by half); the result tables are the same whatever N.
Last, for the openb trace, it replays it at 1x, 4x and 16x under every policy and checks every figure (but jobs/s)
against bench/replay_figures_before_issue20.json, what the replay gave before the one-driver redesign (issue 20).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vipu.replay.summary import result_json  # noqa: E402
from vipu.replay.simulation import main_replay, simulate_trace  # noqa: E402

OPENB = "openb_pod_list_default.csv"  # Alibaba's openb pod list: github.com/alibaba/clusterdata (cluster-trace-gpu-v2023)
# where a developer's checkout finds it (next to the project: ../shared/traces), from here or from where it runs
PLACES = [Path(__file__).resolve().parents[2] / "shared" / "traces", Path.cwd().parent / "shared" / "traces"]
TRACE = str(next((place / OPENB for place in PLACES if (place / OPENB).is_file()), PLACES[0] / OPENB))
BEFORE = Path(__file__).with_name("replay_figures_before_issue20.json")
POLICIES = ["fifo", "priority", "backfill", "sjf"]
GENERATED = 8000  # jobs of the generated trace replayed when there is no trace file (vipu simulate --synthetic)


def figures(trace: str, pod: str) -> list[dict]:
    """Every figure of the openb replays BEFORE holds, but the speed (jobs/s) and the trace's path."""
    out = []
    for compression in (1.0, 4.0, 16.0):
        sim = simulate_trace(trace, pod, POLICIES, compression=compression)
        for result in sim.results:
            row = {k: v for k, v in result_json(result, sim).items() if k not in ("jobs_per_s", "trace")}
            out.append({**row, "cycles": result.cycles})
    return out


def compare_with_before(trace: str, pod: str) -> str:
    before = json.loads(BEFORE.read_text())
    now = [{k: n.get(k) for k in b} for b, n in zip(before, figures(trace, pod))]  # figures added since are new
    if now == before:
        return f"every figure of {len(now)} replays (1x, 4x, 16x; {', '.join(POLICIES)}) equals {BEFORE.name}"
    changed = [f"{b['policy']} x{b['compress']:g}: {k} {b[k]} -> {n[k]}" for b, n in zip(before, now)
               for k in b if b[k] != n.get(k)]
    return f"CHANGED since {BEFORE.name}: {'; '.join(changed) or 'the rows differ'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=TRACE)
    parser.add_argument("--pod", default="bow-pod256")
    parser.add_argument("--policies", default="fifo,priority,backfill,sjf")
    parser.add_argument("--compressions", default="1,4", help="arrival-time compression factors to run")
    parser.add_argument("--repeat", type=int, default=3, help="replays per policy; the fastest is shown")
    args = parser.parse_args()
    trace, generated = args.trace, {}
    if not Path(trace).is_file():
        print(f"bench_replay: no trace at {trace}; replaying a generated one of {GENERATED} jobs instead (give --trace"
              f" FILE: an openb pod list, e.g. {OPENB} from github.com/alibaba/clusterdata, or any format of"
              " docs/traces.md)\n")
        trace, generated = None, {"synthetic": GENERATED}
    for compression in (float(c) for c in args.compressions.split(",")):
        t0 = time.perf_counter()
        print(main_replay(trace, args.pod, args.policies.split(","), timer=time.perf_counter,
                          repeat=args.repeat, compression=compression, **generated))
        print(f"(whole run incl. reading the trace: {time.perf_counter() - t0:.1f} s wall)\n")
    if trace is not None and Path(trace).name == OPENB and args.pod == "bow-pod256":
        print(compare_with_before(args.trace, args.pod))


if __name__ == "__main__":
    main()
