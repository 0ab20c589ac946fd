"""The models a training job describes, reduced to what the planner needs: sizes, FLOPs and bytes sent.

Each model answers the same questions (per sample, or per micro-batch of b samples):
- params(), param_tensors(): weights, and how many tensors they come in (one data-parallel collective each when
  gradients are not fused);
- units: how many layers a pipeline can split between;
- forward_flops(): FLOPs of one forward pass of one sample (training multiplies it: assumptions.py);
- boundary_bytes(b): what one pipeline stage sends the next per micro-batch;
- tp_allreduces_per_layer and tp_bytes(b): Megatron's tensor-parallel allreduces (forward; backward has as many);
- norm_replicas, norm_allreduces(): replicas pooling normalisation statistics, and the allreduces (count, bytes in
  all) one pass of one micro-batch makes for it (distributed batch norm; none by default);
- shard_problem(t): why t tensor shards do not work for this model, or None.
What a stage's blocks hold for the backward pass (activations, checkpoints), per IPU, is blocks.py's.
"""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vipu.spec_numbers import Count, Number

Dtype = Literal["fp16", "fp32"]
DTYPE_BYTES = {"fp16": 2, "fp32": 4}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Model(Strict):
    dtype: Dtype = "fp16"

    @property
    def value_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def norm_replicas(self) -> int:
        return 1

    def norm_allreduces(self) -> tuple[int, float]:
        return 0, 0.0

    def shard2_problem(self, t2: int) -> str | None:
        """Why a second tensor-parallel axis of t2 does not work for this model, or None."""
        return (f"t2 is {t2}, but two-dimensional tensor parallelism is modelled for transformer models only"
                f" (PopXL's GPT-3); use t2: 1 and t: {t2} or more for one axis")

    @property
    def sequences_per_sample(self) -> float:
        return 1.0

    def attention_scores(self) -> float:
        """Attention scores per sample and layer, which the vector units (not the matrix units) scale, mask and
        softmax: none without attention."""
        return 0.0


class MlpModel(_Model):
    """`layers` linear layers (ReLU between): inputs -> hidden -> ... -> hidden -> outputs."""

    kind: Literal["mlp"] = "mlp"
    layers: Count = Field(le=100_000)
    hidden: Count = Field(le=1 << 20)
    inputs: Count = Field(le=1 << 20)
    outputs: Count = Field(le=1 << 20)

    # Megatron pairs a column-parallel layer with a row-parallel one: one allreduce per pair forward (and one
    # backward), so half an allreduce per layer, of b x hidden values
    tp_allreduces_per_layer: ClassVar[float] = 0.5

    @property
    def widths(self) -> list[int]:
        return [self.inputs] + [self.hidden] * (self.layers - 1) + [self.outputs]

    @property
    def _pairs(self) -> list[tuple[int, int]]:
        w = self.widths
        return list(zip(w, w[1:]))

    @property
    def units(self) -> int:
        return self.layers

    def params(self) -> int:
        return sum(i * o + o for i, o in self._pairs)

    def param_tensors(self) -> int:
        return 2 * self.layers  # weight and bias

    def forward_flops(self) -> float:
        return float(sum(2 * i * o for i, o in self._pairs))

    def input_bytes(self) -> float:
        return self.inputs * self.value_bytes

    def boundary_bytes(self, b: int) -> float:
        return b * self.hidden * self.value_bytes

    def tp_bytes(self, b: int) -> float:
        return b * self.hidden * self.value_bytes

    def shard_problem(self, t: int) -> str | None:
        if self.hidden % t:
            return f"t is {t}, which does not divide hidden {self.hidden}; use a power of two that divides it"
        return None


class TransformerModel(_Model):
    """An encoder (or decoder) stack: `layers` of attention + feed-forward, hidden size h, `heads` heads.

    With `vocab`, token and position embeddings are added and the output head is tied to the token embedding
    (BERT and GPT tie them), so it adds FLOPs but no weights. A masked language model's head runs on its
    `mask_tokens` positions only (Graphcore's BERT configs: 20 of 128, 56 of 384, 76 of 512); a language model's
    on every position. With packing, a sample is a pack of up to seq_len tokens holding `sequences_per_pack`
    sequences on average (Graphcore's packed BERT), and throughput counts sequences."""

    kind: Literal["transformer"] = "transformer"
    layers: Count = Field(le=10_000)
    hidden: Count = Field(le=1 << 18)
    heads: Count = Field(le=1 << 12)
    seq_len: Count = Field(le=1 << 20)
    vocab: Count | None = Field(None, le=1 << 24)
    ffn_multiplier: Count = Field(4, le=64)
    mask_tokens: Count | None = Field(None, le=1 << 20, description=(
        "positions per sample the output head runs on (a masked language model's masked tokens; BERT-Large"
        " SL128: 20); default every position. Needs vocab"))
    sequences_per_pack: Number = Field(1.0, ge=1, le=1 << 10, description=(
        "packed sequences: each sample is a pack of up to seq_len tokens holding this many sequences on average;"
        " throughput counts sequences. 1: no packing"))

    tp_allreduces_per_layer: ClassVar[float] = 2  # Megatron: one after attention, one after the feed-forward block

    @model_validator(mode="after")
    def _heads_divide_hidden(self) -> TransformerModel:
        if self.hidden % self.heads:
            below = max(d for d in range(1, min(self.heads, self.hidden + 1)) if self.hidden % d == 0)
            above = [d for d in range(self.heads + 1, self.hidden + 1) if self.hidden % d == 0][:1]
            near = " or ".join(map(str, [below, *above]))
            raise ValueError(f"heads is {self.heads}, which does not divide hidden {self.hidden}; give heads a"
                             f" divisor of {self.hidden}, e.g. {near} (a head has hidden / heads features)")
        if self.mask_tokens is not None and not self.vocab:
            raise ValueError(f"mask_tokens is {self.mask_tokens} but there is no vocab: the head the masked positions"
                             " run on projects onto the vocabulary; set vocab, or drop mask_tokens")
        if self.mask_tokens is not None and self.mask_tokens > self.seq_len:
            raise ValueError(f"mask_tokens is {self.mask_tokens} but a sample has seq_len ({self.seq_len})"
                             f" positions; give mask_tokens at most {self.seq_len}")
        if self.sequences_per_pack > self.seq_len:
            raise ValueError(f"sequences_per_pack is {self.sequences_per_pack:g} but a pack holds at most seq_len"
                             f" ({self.seq_len}) tokens; use 1 <= sequences_per_pack <= {self.seq_len}")
        return self

    @property
    def units(self) -> int:
        return self.layers

    @cached_property
    def layer_params(self) -> int:
        h, f = self.hidden, self.ffn_multiplier
        # Q, K, V and output projections (4h^2 + 4h), feed-forward (2fh^2 + fh + h), two layer norms (4h)
        return (4 + 2 * f) * h * h + (9 + f) * h

    @cached_property
    def embedding_params(self) -> int:
        return (self.vocab + self.seq_len + 2) * self.hidden if self.vocab else 0

    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params

    def param_tensors(self) -> int:
        # per layer: q/k/v and output projection, 2 feed-forward layers (weight + bias each), 2 layer norms
        # (gain + bias); embeddings: token, position, and their layer norm
        return 12 * self.layers + (4 if self.vocab else 0)

    def layer_flops(self) -> float:
        """One layer's forward FLOPs per sample: projections and feed-forward, then the attention scores Q K^T and
        their weighted sum of V (a packed sample's attention is masked, not shortened: the same FLOPs)."""
        h, s, f = self.hidden, self.seq_len, self.ffn_multiplier
        return float(2 * s * (4 + 2 * f) * h * h + 4 * s * s * h)

    def attention_scores(self) -> float:
        """heads x s x s: every head scores every position against every position (a packed sample's too: its
        mask only hides the other sequences)."""
        return float(self.heads * self.seq_len * self.seq_len)

    def head_flops(self) -> float:
        """The output head's forward FLOPs per sample: the tied projection onto the vocabulary at each position it
        runs on (mask_tokens, or all)."""
        if not self.vocab:
            return 0.0
        return float(2 * (self.mask_tokens or self.seq_len) * self.hidden * self.vocab)

    def forward_flops(self) -> float:
        return self.layers * self.layer_flops() + self.head_flops()

    @property
    def sequences_per_sample(self) -> float:
        return self.sequences_per_pack

    def input_bytes(self) -> float:
        """Bytes the host sends per sample: with a vocabulary token, position and segment ids (int32 each);
        without, the input vectors."""
        return 3 * 4 * self.seq_len if self.vocab else self.seq_len * self.hidden * self.value_bytes

    def boundary_bytes(self, b: int) -> float:
        return self.seq_len * b * self.hidden * self.value_bytes

    def tp_bytes(self, b: int) -> float:
        return self.seq_len * b * self.hidden * self.value_bytes

    def shard_problem(self, t: int) -> str | None:
        if self.heads % t:
            return (f"t is {t}, which does not divide heads {self.heads}; Megatron gives each shard whole heads,"
                    " so use a power of two that divides heads")
        return None

    def shard2_problem(self, t2: int) -> str | None:
        if self.hidden % t2:
            return (f"t2 is {t2}, which does not divide hidden {self.hidden}; the second axis splits the hidden"
                    " dimension, so use a power of two that divides it")
        return None
