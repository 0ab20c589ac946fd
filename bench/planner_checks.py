"""What Graphcore's PopART BERT configs do beside what the planner prices, sized on each bench row: the figures
docs/planner-fidelity.md ("What the configs do") quotes. bench/bench_planner.py prints them after its table.
"""

from __future__ import annotations

from vipu.jobs.blocks import layout_stage_layers
from vipu.jobs.calibration import PODS
from vipu.jobs.timing import stage_forward_flops
from vipu.jobs.train_spec import plan_spec

# poplibs' half ADD: a cycle and two of overhead a 4-wide vector (graphcore/poplibs 7eac0f26
# lib/popops/popopsCycleEstimators.cpp binaryOpInnerLoopCycles; the figure vipu/sdk/nn/vector_cycles.py uses)
HALF_ADD_CYCLES = 0.75
# a packed layer's AttentionMask op (graphcore/examples nlp/bert/popart/custom_ops/attention_mask.cpp at c0239af):
# a subtraction, abs, tanh and a multiply on micro-batch x s^2 values; each taken at 4 cycles a value, above
# poplibs' half ABSOLUTE and TANH entries (lib/popops/popopsCycleEstimators.hpp), so a bound
MASK_OPS, MASK_OP_CYCLES = 4, 4.0


def config_checks(points, planned) -> None:
    """For each PopART-style BERT row (optimiser state off chip): the time a step the planner misses against the
    published figure; what it prices for the state's streaming; IPU 0's FLOPs against the busiest stage's; and two
    costs it does not price, as a share of the busiest stage's compute a tick: adding a micro-batch's weight
    gradients into the accumulators, and (packed rows) the attention mask each layer builds, forward twice."""
    rows = [point for point in points if point.spec["workload"]["layout"].get("offload_optimizer")]
    print("what the BERT configs do beside the planned time (s a step; shares of the busiest stage's compute tick):")
    print(f"  {'model':<24} {'system':<11} {'missing':>8} {'streaming':>9} {'IPU 0':>6} {'accumulate':>10}"
          f" {'packed mask':>11}")
    for point in rows:
        plan = planned(point)
        checked, pod = plan_spec(point.spec)
        workload = checked.workload
        model, lay = workload.model, workload.layout
        flops = stage_forward_flops(workload)
        busiest = max(range(lay.p), key=flops.__getitem__)
        layers = len(layout_stage_layers(model, lay, busiest))
        tile_hz = (pod.ipu.tiles - lay.io_tiles) * pod.ipu.clock_hz
        tick = plan.time.compute_s / lay.micro_batches
        accumulate = layers * model.layer_params * HALF_ADD_CYCLES / tile_hz / tick
        packed = model.sequences_per_pack > 1
        mask = (layers * 2 * lay.micro_batch * model.seq_len ** 2 * MASK_OPS * MASK_OP_CYCLES / tile_hz / tick
                if packed else 0.0)
        published_step = plan.step_s * plan.throughput / point.published
        print(f"  {point.model:<24} {PODS[point.ipus]:<11} {published_step - plan.step_s:>8.2f}"
              f" {plan.time.streaming_s:>9.3f} {flops[0] / flops[busiest]:>6.0%} {accumulate:>10.2%}"
              f" {(f'{mask:.2%}' if packed else '-'):>11}")
