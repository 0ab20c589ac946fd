"""The human report of a Plan: what `vipu plan SPEC` prints."""

from __future__ import annotations

from fractions import Fraction

from vipu.jobs.layout import stage_name
from vipu.jobs.units import size as _bytes


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:,.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.2f} ms"
    return f"{s * 1e6:,.1f} us"


def render(plan, suggestions=None) -> str:
    """The report; for a plan that does not fit, its problems then `suggestions` (suggest(): fitting layouts of the
    same partition, in rank()'s order) right under the DOES NOT FIT line, before the assumptions."""
    from vipu.jobs.suggest import ORDER, no_layout_fits, suggestion_text

    mem, time, lay = plan.memory, plan.time, plan.layout
    lines = [
        f"plan: {plan.model} ({plan.params:,} parameters), {plan.optimizer}",
        f"  on {plan.ipus} IPUs of {plan.pod}: {lay.describe()}",
        f"  global batch {plan.global_batch:,} samples per step ({lay.device_iterations} step(s) per host call)",
        "",
        *_sram_lines(plan),
        "",
        *_streaming_lines(plan),
        "",
        "step time",
    ]
    total = time.total_s
    for name, seconds in time.parts():
        share = seconds / total if total else 0.0
        lines.append(f"  {name:<28} {_seconds(seconds):>12} {share:>6.1%}")
    lines += [
        f"  {'total':<28} {_seconds(total):>12}",
        f"  bubble: p-1 = {lay.p - 1} of the pipeline's m+p-1 = {lay.micro_batches + lay.p - 1} ticks"
        f" ({time.bubble_fraction:.1%})" + (", the first and last of them shorter (those stages send one way)"
                                             if lay.p > 2 else ""),
        *_bubble_note(lay),
        f"  compute: the busiest stage's FLOPs at the calibrated efficiency, its attention scores' vector cycles, and"
        f" the on-chip sync ending each of its compute sets ({_seconds(time.compute_sync_s)} of it); per-IPU UTIL in"
        " `vipu logs` counts the FLOP and vector time only",
        f"throughput {plan.throughput:,.1f} {'sequences' if plan.sequences_per_sample != 1 else 'samples'}/s"
        f" ({plan.achieved_flops_per_ipu / 1e12:,.1f} TFLOPS per IPU achieved)",
    ]
    if not plan.fits:
        lines += ["", "DOES NOT FIT:"] + [f"  {p}" for p in plan.problems()]
        if suggestions:
            lines += [ORDER]
            lines += [f"  {suggestion_text(c, lay)}" for c in suggestions]
        elif suggestions is not None:
            lines += [no_layout_fits(plan)]
    lines += ["", "assumptions"] + [f"  - {a}" for a in plan.assumptions]
    return "\n".join(lines)


LARGE_BUBBLE = Fraction(1, 3)  # a bubble share over this gets a note with the fix (walk33: 15 of 23 ticks got none)


def _bubble_note(lay) -> list[str]:
    """A note when the pipeline idles much of the time: fewer micro-batches than the pipeline needs to fill it."""
    if lay.bubble_fraction <= LARGE_BUBBLE:
        return []
    m, p = lay.micro_batches, lay.p
    few = f"; at most {m} of the {p} stages compute at once" if p > m else ""
    return [f"  note: the bubble is {float(lay.bubble_fraction):.0%} of the pipeline (micro_batches {m}, p {p}){few};"
            f" set workload.layout.micro_batches to at least 4p = {4 * p} to keep it under 20% (the global batch is"
            " micro_batch x micro_batches x r: lower micro_batch to keep it)"]


def _stage(plan, stage: int) -> str:
    return f", {stage_name(stage, plan.layout.p)} (the one needing most)" if plan.layout.p > 1 else ""


def _sram_lines(plan) -> list[str]:
    mem, lay = plan.memory, plan.layout
    tiles = mem.tiles
    return [
        f"memory per IPU (SRAM){_stage(plan, mem.sram_stage)}",
        f"  weights                  {_bytes(mem.weights):>12}",
        f"  gradient accumulators    {_bytes(mem.gradients):>12}",
        f"  optimiser state          {_bytes(mem.optimizer):>12}",
        f"  activations              {_bytes(mem.activations):>12}"
        f"   ({'one block; not phased: ' if lay.phased else ''}without recomputation"
        f" {_bytes(mem.activations_no_recompute)}, with {_bytes(mem.activations_recompute)})",
        f"  code and exchange        {_bytes(mem.reserved):>12}",
        f"  total                    {_bytes(mem.total):>12}   of {_bytes(mem.sram_bytes)} SRAM"
        f" ({mem.total / mem.sram_bytes:.0%})",
        f"  per tile, evenly split   {mem.per_tile / 1024:>8,.0f} KiB   of {mem.sram_per_tile_bytes / 1024:,.0f} KiB"
        f" (without matmul temporaries; {tiles.compute_tiles:,} compute tiles"
        f"{f', {lay.io_tiles} I/O tiles' if lay.io_tiles else ''})",
        f"  fullest tile at the peak {tiles.peak / 1024:>8,.0f} KiB   of {tiles.tile_bytes / 1024:,.0f} KiB:"
        f" always-live {tiles.always_live / 1024:,.0f}, not-always-live {tiles.not_always_live / 1024:,.0f}"
        f" (matmul temporaries {tiles.temporaries / 1024:,.0f}, available_memory_proportion"
        f" {lay.available_memory_proportion:g}), code and exchange {tiles.reserve / 1024:,.0f} KiB",
        f"  fits SRAM: {'yes' if mem.fits_sram else 'NO'}",
    ]


def _streaming_lines(plan) -> list[str]:
    mem, lay = plan.memory, plan.layout
    if mem.streaming <= 0:
        return ["memory per IPU (Streaming Memory): none needed"]
    mean = f"; mean over the stages {_bytes(mem.streaming_mean)}" if lay.p > 1 else ""
    lines = [f"memory per IPU (Streaming Memory){_stage(plan, mem.streaming_stage)}{mean}"]
    parts = (("weights", mem.streaming_weights), ("gradient accumulators", mem.streaming_gradients),
             ("optimiser state", mem.streaming_optimizer), ("stashed block inputs", mem.streaming_stash))
    lines += [f"  {name:<24} {_bytes(nbytes):>12}" for name, nbytes in parts if nbytes > 0]
    if mem.streaming_stash > 0:
        lines[-1] += (f"   (all {lay.in_flight_at(mem.streaming_stage)} micro-batches' phase inputs: batch"
                      f" serialisation{f'; split {lay.t} ways' if lay.t > 1 else ''})")
    lines += [
        f"  total                    {_bytes(mem.streaming):>12}   of {_bytes(mem.streaming_capacity)}, the IPU's"
        f" share of its machine's ({mem.streaming / mem.streaming_capacity:.0%})",
        f"  fits Streaming Memory: {'yes' if mem.fits_streaming else 'NO (MORE THAN THE MACHINE HAS)'}",
    ]
    return lines
