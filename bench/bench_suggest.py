"""The planner's search for layouts that fit (suggest.py), which a submit of a spec that does not fit runs before it
refuses it: CPU seconds of one search, beside one plan() of the same spec, in one run.

Run: .venv/bin/python bench/bench_suggest.py

Each row is a spec that does not fit (so submit and `vipu plan` search): the layouts tried, those that fit, the
search's CPU time (time.process_time, cold: the per-search caches cleared first), one plan()'s, and their ratio,
the search's cost in plans. The load average is printed first: under load the CPU clock is still this process's.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vipu.hardware.pod_files import load_pod  # noqa: E402
from vipu.jobs import TrainWorkload, plan  # noqa: E402
from vipu.jobs.blocks import _stage_costs  # noqa: E402
from vipu.jobs.assumptions import DEFAULT  # noqa: E402
from vipu.jobs.suggest import candidate_layouts, ranked_fitting  # noqa: E402


def transformer(layers, hidden, heads, seq_len, vocab, **layout) -> TrainWorkload:
    return TrainWorkload(model={"kind": "transformer", "layers": layers, "hidden": hidden, "heads": heads,
                                "seq_len": seq_len, "vocab": vocab}, layout=layout)


SPECS = [  # (name, workload, pod)
    ("BERT-Large gpipe, Pod16", transformer(24, 1024, 16, 128, 30400, p=4, r=4, micro_batch=8, micro_batches=64,
                                            schedule="gpipe", rts=True, offload_optimizer=True), "bow-pod16"),
    ("GPT 2.6B t4 p4 r4, Pod64", transformer(32, 2560, 32, 2048, 50257, t=4, p=4, r=4, micro_batch=4,
                                             micro_batches=64, io_tiles=32), "bow-pod64"),
    ("GPT-3 t8 p4 r8, Pod256", transformer(96, 12288, 96, 2048, 50257, t=8, p=4, r=8, micro_batch=4,
                                           micro_batches=32, io_tiles=128), "bow-pod256"),
]


def main() -> int:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'spec':<28} {'layouts':>7} {'fit':>5} {'search s':>9} {'plan s':>8} {'ratio':>6}")
    for name, workload, pod_name in SPECS:
        pod = load_pod(pod_name)
        ranked_fitting.cache_clear()
        _stage_costs.cache_clear()
        start = time.process_time()
        fitting = ranked_fitting(workload, pod, DEFAULT, None)
        search = time.process_time() - start
        start = time.process_time()
        plan(workload, pod)
        one = time.process_time() - start
        layouts = sum(1 for _ in candidate_layouts(workload, workload.layout.ipus))
        print(f"{name:<28} {layouts:>7,} {len(fitting):>5,} {search:>9.2f} {one:>8.4f} {search / one:>6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
