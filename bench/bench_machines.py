"""The emulation's own wall-clock cost of bringing up the machine actors of a Pod64 partition.

Run: .venv/bin/python bench/bench_machines.py [--machines N] [--repeat R]
Goal (issue 4): the 16 actors of a Pod64 partition up in under 15 s on 2 cores; a second actors_for() of the same
machines costs nothing (the actors are kept). All times here are wall-clock on this machine; Ray's own start-up
is measured separately because the server pays it once, not per partition.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import time

import numpy as np
import ray

from vipu.hardware.pod_files import load_pod
from vipu.workers.pool import MachinePool


def actor_rss_mb() -> list[float]:
    """Resident memory of each live MachineActor process (Linux /proc), to size a Pod256's worth."""
    sizes = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"MachineActor" not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                rss = next(line for line in f if line.startswith("VmRSS:"))
            sizes.append(int(rss.split()[1]) / 1024)
        except (OSError, StopIteration):
            continue
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=16, help="machines in the partition (Pod64: 16)")
    parser.add_argument("--repeat", type=int, default=1, help="bring-ups to time (a fresh pool each)")
    args = parser.parse_args()
    pod = load_pod("bow-pod64")
    machines = list(range(args.machines))

    cpu = platform.processor() or platform.machine()
    print(f"# bench_machines: {time.strftime('%Y-%m-%d')} on {platform.node()} ({cpu}, {os.cpu_count()} cores,"
          f" Python {platform.python_version()}, Ray {ray.__version__}); every time is wall-clock")
    temp_dir = f"/tmp/vipu-bench-{os.getpid()}"
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir, configure_logging=False)
    print(f"ray.init (once per server, not per partition): {time.perf_counter() - start:.2f} s")
    try:
        for run in range(args.repeat):
            pool = MachinePool(pod)
            start = time.perf_counter()
            actors = pool.actors_for(machines)
            up = time.perf_counter() - start
            start = time.perf_counter()
            pool.actors_for(machines)
            again = time.perf_counter() - start
            start = time.perf_counter()
            ray.get([a.put_tensor.remote(0, "w", np.ones(1 << 20, np.float16)) for a in actors.values()])
            put = time.perf_counter() - start
            print(f"run {run + 1}: {len(actors)} machine actors up in {up:.2f} s (goal < 15 s);"
                  f" second actors_for of the same machines {again * 1e3:.2f} ms ({pool.created} created in all);"
                  f" a 2 MiB put_tensor on each {put * 1e3:.0f} ms")
            rss = actor_rss_mb()
            if rss:
                print(f"       resident memory per actor: mean {sum(rss) / len(rss):.0f} MB, max {max(rss):.0f} MB"
                      f" ({len(rss)} processes, {sum(rss) / 1024:.1f} GB in all)")
            start = time.perf_counter()
            pool.shutdown()
            print(f"       shutdown (kill {len(actors)} actors, remove their placement groups):"
                  f" {(time.perf_counter() - start) * 1e3:.0f} ms")
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
