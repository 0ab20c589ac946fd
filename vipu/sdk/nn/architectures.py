"""The shapes of the models the stage code runs: what a program states about its model, and all the code reads.

Why plain dataclasses: a program describes its model in a line (MLP(layers=4, hidden=64, inputs=32, outputs=10)).
The built-in `train` workload's validated models (vipu/jobs/models.py: MlpModel, TransformerModel) have the same
attributes, so the same code takes either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MLP:
    """`layers` linear layers with ReLU between them: inputs -> hidden -> ... -> hidden -> outputs (logits)."""

    layers: int
    hidden: int
    inputs: int
    outputs: int
    dtype: Literal["fp16", "fp32"] = "fp32"  # what the Pod would compute in (timing); the arithmetic is fp32
    kind: Literal["mlp"] = "mlp"

    @property
    def widths(self) -> list[int]:
        return [self.inputs] + [self.hidden] * (self.layers - 1) + [self.outputs]

    @property
    def units(self) -> int:
        """What a pipeline splits between its stages: layers."""
        return self.layers


@dataclass(frozen=True)
class Transformer:
    """A stack of pre-LN encoder layers on real vectors (no vocabulary): attention of `heads` heads, then a
    feed-forward of ffn_multiplier x hidden units."""

    layers: int
    hidden: int
    heads: int
    seq_len: int
    ffn_multiplier: int = 4
    dtype: Literal["fp16", "fp32"] = "fp32"
    vocab: None = None  # executed transformers have no vocabulary (inputs are vectors)
    kind: Literal["transformer"] = "transformer"

    @property
    def units(self) -> int:
        return self.layers
