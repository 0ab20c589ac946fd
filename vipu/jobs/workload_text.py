"""A training workload's model and layout in words, as `vipu plan`, a run's log and `vipu show job` print them.

Plain Python on anything with the fields as attributes (the pydantic models, or the CLI's job spec as it came over
the wire): `vipu show job` needs the words without importing the planner, which costs it most of a second."""

from __future__ import annotations


def model_text(model) -> str:
    if model.kind == "mlp":
        return f"mlp {model.layers} layers, {model.inputs}->{model.hidden}->{model.outputs}, {model.dtype}"
    if model.kind == "transformer":
        vocab = f", vocab {model.vocab}" if model.vocab else ""
        vocab += f" (head on {model.mask_tokens} masked tokens)" if model.mask_tokens else ""
        vocab += f", {model.sequences_per_pack:g} sequences a pack" if model.sequences_per_pack != 1 else ""
        return (f"transformer {model.layers} layers, hidden {model.hidden}, {model.heads} heads, sequence"
                f" {model.seq_len}{vocab}, {model.dtype}")
    return f"{model.kind} (224x224 images), {model.dtype}"


def layout_text(layout) -> str:
    options = [name for name, on in (("recomputation", layout.recompute), ("RTS", layout.rts),
                                     ("optimiser offload", layout.offload_optimizer),
                                     # PopXL's phased backward always recomputes its phase (layout.py)
                                     ("phased execution, which recomputes" if not layout.recompute
                                      else "phased execution", layout.phased)) if on]
    order = "gpipe, batch-serialised" if layout.phased else layout.schedule
    t2 = f" t2={layout.t2}" if layout.t2 > 1 else ""
    text = (f"t={layout.t}{t2} p={layout.p} r={layout.r}, micro-batch {layout.micro_batch} x {layout.micro_batches}"
            f" ({order})")
    if layout.io_tiles:
        options.append(f"{layout.io_tiles} I/O tiles")
    return text + (" with " + ", ".join(options) if options else "")
