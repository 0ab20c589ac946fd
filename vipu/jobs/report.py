"""The human report of a Plan: what `vipu plan SPEC` prints."""

from __future__ import annotations


def _bytes(nbytes: float) -> str:
    if nbytes >= 1e9:
        return f"{nbytes / 1e9:,.2f} GB"
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:,.1f} MB"
    if nbytes >= 1e3:
        return f"{nbytes / 1e3:,.1f} kB"
    return f"{nbytes:,.0f} B"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:,.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.2f} ms"
    return f"{s * 1e6:,.1f} us"


def render(plan, suggestions=None) -> str:
    """The report; for a plan that does not fit, its problems then `suggestions` (suggest(): fitting layouts of the
    same partition, best first) right under the DOES NOT FIT line, before the assumptions."""
    from vipu.jobs.suggest import no_layout_fits, suggestion_text

    mem, time, lay = plan.memory, plan.time, plan.layout
    lines = [
        f"plan: {plan.model} ({plan.params:,} parameters), {plan.optimizer}",
        f"  on {plan.ipus} IPUs of {plan.pod}: {lay.describe()}",
        f"  global batch {plan.global_batch:,} samples per step ({lay.device_iterations} step(s) per host call)",
        "",
        "memory per IPU (SRAM)",
        f"  weights                  {_bytes(mem.weights):>12}",
        f"  gradient accumulators    {_bytes(mem.gradients):>12}",
        f"  optimiser state          {_bytes(mem.optimizer):>12}",
        f"  activations              {_bytes(mem.activations):>12}"
        f"   ({'one phase; not phased: ' if lay.phased else ''}without recomputation"
        f" {_bytes(mem.activations_no_recompute)}, with {_bytes(mem.activations_recompute)})",
        f"  code and exchange        {_bytes(mem.reserved):>12}",
        f"  total                    {_bytes(mem.total):>12}   of {_bytes(mem.sram_bytes)} SRAM"
        f" ({mem.total / mem.sram_bytes:.0%})",
        f"  per tile                 {mem.per_tile / 1024:>8,.0f} KiB   of {mem.sram_per_tile_bytes / 1024:,.0f} KiB",
        f"  streaming memory         {_bytes(mem.streaming):>12}   of {_bytes(mem.streaming_capacity)} per IPU",
        f"  fits SRAM: {'yes' if mem.fits_sram else 'NO'}; "
        f"needs Streaming Memory: {'yes' if mem.streaming > 0 else 'no'}"
        + ("" if mem.fits_streaming else " (MORE THAN THE MACHINE HAS)"),
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
        f"throughput {plan.throughput:,.1f} samples/s"
        f" ({plan.achieved_flops_per_ipu / 1e12:,.1f} TFLOPS per IPU achieved)",
    ]
    if not plan.fits:
        lines += ["", "DOES NOT FIT:"] + [f"  {p}" for p in plan.problems()]
        if suggestions:
            lines += ["layouts of the same partition that fit, best first:"]
            lines += [f"  {suggestion_text(c)}" for c in suggestions]
        elif suggestions is not None:
            lines += [no_layout_fits(plan)]
    lines += ["", "assumptions"] + [f"  - {a}" for a in plan.assumptions]
    return "\n".join(lines)
