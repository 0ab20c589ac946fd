"""Executed training: the tiny examples trained on their emulated IPUs, against single-device training and the
planner's prediction, and one of them on real machine actors.

Run: .venv/bin/python bench/bench_training.py [--no-actors] [--actors-example tiny_tp]
For each run: loss at the first and last step, the largest relative difference from single-device training over
all steps (the proof that the split is real: ~1e-7 is fp32 rounding), the emulated step time (vipu/jobs/train:
BSP compute sets, the fabric's collectives, the pipeline laid out event by event) against the planner's predicted
step time (vipu/jobs/planner.py, with the emulation's fused gradient allreduce), and the wall-clock per step of the
emulation itself. A medium transformer (not an example) shows the comparison where compute and bandwidth, not
latency, start to count, and an MLP with replicas strided by 2, RTS and its optimiser state in Streaming Memory
shows the data-parallel allreduce over strided groups and the streaming; the same MLP phased with RTS stores its
weights sharded across the replicas and all-gathers them before use. Then the emulated split of one step beside
the planner's.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from vipu.hardware.pod_files import load_pod
from vipu.jobs.train_spec import TrainWorkload, load_plan_spec
from vipu.jobs.train import run_training, train_reference
from vipu.jobs.units import size

EXAMPLES = Path(__file__).parents[1] / "examples"
TINY = ["tiny_dp", "tiny_pp", "tiny_tp"]


def medium() -> tuple[TrainWorkload, object]:
    model = {"kind": "transformer", "layers": 4, "hidden": 256, "heads": 8, "seq_len": 64, "dtype": "fp16"}
    layout = {"t": 4, "p": 2, "r": 2, "micro_batch": 2, "micro_batches": 3}
    w = TrainWorkload(model=model, layout=layout, optimizer="adam", steps=3, learning_rate=3e-4, seed=5)
    return w, load_pod("bow-pod64")


def strided_rts(**options) -> tuple[TrainWorkload, object]:
    """Replicas strided by 2 (p=2, r=4) with RTS and `options` (the optimiser state in Streaming Memory, or
    phased execution: the weights too)."""
    model = {"kind": "mlp", "layers": 4, "hidden": 256, "inputs": 64, "outputs": 10, "dtype": "fp32"}
    layout = {"t": 1, "p": 2, "r": 4, "micro_batch": 16, "micro_batches": 4, "rts": True, **options}
    w = TrainWorkload(model=model, layout=layout, optimizer="adam", steps=3, learning_rate=1e-3, seed=7)
    return w, load_pod("bow-pod16")


def fmt_s(s: float) -> str:
    return f"{s * 1e3:8.3f} ms" if s >= 1e-3 else f"{s * 1e6:8.1f} us"


def row(label: str, workload, pod, transport_factory=None, transport: str = "local") -> dict:
    want, _ = train_reference(workload)
    kwargs = {} if transport_factory is None else {"transport_factory": transport_factory}
    result = run_training(workload, pod, 0, **kwargs)
    diff = float(np.max(np.abs(np.array(result.losses) - want) / np.abs(want)))
    wall = np.mean([r.wall_s for r in result.reports])
    print(f"  {label:<14} {transport:<6} {result.layout:<44} {result.ipus:>4} {result.steps_run:>5}"
          f"  {result.losses[0]:7.4f} -> {result.losses[-1]:7.4f}  {diff:8.1e}  {fmt_s(result.emulated_step_s)}"
          f"  {fmt_s(result.predicted_step_s)}  {result.emulated_step_s / result.predicted_step_s:5.2f}"
          f"  {wall * 1e3:8.1f} ms  {result.throughput_samples_per_s:12,.0f}")
    return {"label": label, "result": result}


def header() -> None:
    print(f"  {'run':<14} {'where':<6} {'layout':<44} {'IPUs':>4} {'steps':>5}  {'loss first -> last':<18}"
          f"  {'vs 1-dev':>8}  {'emulated':>11}  {'predicted':>11}  {'ratio':>5}  {'wall/step':>11}"
          f"  {'samples/s':>12}")


def parts(runs: list[dict]) -> None:
    print("\nOne step, emulated vs predicted (mean over the steps run):")
    for run in runs:
        result = run["result"]
        print(f"  {run['label']} ({result.model}):")
        for name, predicted in result.predicted_parts.items():
            emulated = result.emulated_parts[name]
            if predicted or emulated:
                print(f"    {name:<30} {fmt_s(emulated)}  {fmt_s(predicted)}")
        last = result.reports[-1]
        links = ", ".join(f"{k} {v / 1e3:,.1f} kB" for k, v in last.bytes_per_link_type.items() if v)
        print(f"    link traffic per step: {links or 'none'}; bubble fraction {last.bubble_fraction:.3f};"
              f" IPU utilisation {min(i.utilisation for i in last.ipus.values()):.4f}.."
              f"{max(i.utilisation for i in last.ipus.values()):.4f}; memory per IPU up to"
              f" {size(max(i.memory_bytes for i in last.ipus.values()))}")


def on_actors(name: str) -> None:
    import ray

    from vipu.fabric.ray_transport import RayTransport
    from vipu.workers.pool import MachinePool

    spec, pod = load_plan_spec(EXAMPLES / f"{name}.yaml")
    temp_dir = f"/tmp/vipu-bench-{os.getpid()}"
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir, configure_logging=False)
    try:
        pool = MachinePool(pod)
        pool.actors_for(range(spec.ipus // pod.machine.ipus or 1))
        print(f"\nOn real machine actors (ray.init + actors {time.perf_counter() - start:.2f} s):")
        header()
        local = run_training(spec.workload, pod)
        actors = row(name, spec.workload, pod, lambda group: RayTransport.for_group(pool, group), "actors")
        same = actors["result"].losses == local.losses
        print(f"  losses on actors equal the in-process run bit for bit: {same}")
        pool.shutdown()
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-actors", action="store_true", help="skip the run on real actors")
    parser.add_argument("--actors-example", default="tiny_tp", choices=TINY)
    args = parser.parse_args()
    print(f"# bench_training: {time.strftime('%Y-%m-%d')} on {platform.node()} ({platform.machine()},"
          f" {os.cpu_count()} cores, Python {platform.python_version()})")
    print("\nIn-process (LocalTransport):")
    header()
    runs = []
    for name in TINY:
        spec, pod = load_plan_spec(EXAMPLES / f"{name}.yaml")
        runs.append(row(name, spec.workload, pod))
    runs.append(row("medium", *medium()))
    runs.append(row("offload", *strided_rts(offload_optimizer=True)))
    runs.append(row("phased-rts", *strided_rts(phased=True)))
    parts(runs)
    if not args.no_actors:
        on_actors(args.actors_example)


if __name__ == "__main__":
    main()
