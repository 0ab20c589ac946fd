"""What each block of a pipeline stage holds on one IPU of its t-way tensor group, for the planner.

A block is what runs at once: recomputation keeps its input (the checkpoint) and runs it again before its backward,
and phased execution holds one block in SRAM at a time, its input stashed in Streaming Memory. Trainers run these
blocks (the cut is the SDK's, vipu/sdk/nn/sharding.py, re-exported here) and the planner counts them
(memory_estimate.py), so both hold the same bytes:
- MLP: a stage's consecutive layers in Megatron pairs (column-, then row-parallel: one allreduce each way); the
  odd layer out is "row" parallel if its input width divides by t, else "col" if its output width does, else
  "replicated";
- transformer: one "layer" per layer; phased, its "attention" and its "ffn" block each a phase of its own (a GPT-3
  layer's weights and gradients would not fit one IPU's SRAM even split 8 ways), so the attention block's output
  is stashed too: phased execution stashes each phase's input and recomputes the phase from it in its backward
  (PopART's phased execution with off-chip activations), and every phase boundary is one. Stashing only each
  layer's input would halve the stash, but the feed-forward phase's backward would then need the attention
  phase again (its weights streamed in once more, its forward run a third time), which is not how a phase is
  recomputed. With a vocabulary the first stage also holds the "embedding" with the output head tied to it
  (Graphcore's placement: the last stage sends its output back; Megatron keeps a copy on the last stage instead),
  and takes as many fewer layers as the embedding weighs (Graphcore's BERT-Large configs: layers_per_ipu
  [3, 7, 7, 7]); its activations, the logits included, are counted for every micro-batch in flight;
- ResNet-50: its stem and bottleneck "unit"s (convnet.py), the classifier folded into the last.

Costs are in values (the model's dtype) per sample, per IPU: a sharded tensor counts 1/t, a replicated one whole.
With two tensor-parallel axes (t2 > 1, transformers: vipu/sdk/nn/transformer2d.py) a matrix counts 1/(t t2), a
vector 1/t or 1/t2 as its axis is split, and activations along the hidden axis 1/t2, along heads or feed-forward
units 1/t: a block's input is its 1/t2 of the hidden axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from vipu.sdk.nn.sharding import Block, model_stage_layers, stage_blocks, stage_layers

__all__ = ["Block", "Cost", "cost", "layout_stage_costs", "layout_stage_layers", "model_stage_layers", "stage_blocks",
           "stage_layers"]


@dataclass(frozen=True)
class Cost:
    params: int  # weights on one IPU (its gradient accumulators are as many)
    activations: float  # values a forward keeps for the backward, per sample
    inputs: float  # values of the block's input per sample: its checkpoint


def layout_stage_layers(model, lay, stage: int) -> range:
    """The stage's layers: as many as layers_per_stage gives it (Graphcore's layers_per_ipu), in order, where the
    layout sets it; else the even split (model_stage_layers, the embedding weighed as layers)."""
    return _stage_layers(model, lay.p, stage, lay.layers_per_stage)


def _stage_layers(model, p: int, stage: int, counts: tuple[int, ...] | None) -> range:
    if counts is None:
        return model_stage_layers(model, p, stage)
    start = sum(counts[:stage])
    return range(start, start + counts[stage])


def layout_stage_costs(model, lay, stage: int, phased: bool = False) -> tuple[tuple[Block, Cost], ...]:
    """The blocks of the layout's stage `stage`, on its layers (layout_stage_layers), with their costs. Why cached:
    the planner's search for a layout that fits (suggest.py) counts the same stages of the same model for a few
    thousand layouts that differ only in micro-batching and memory options, and these costs depend on none of
    those."""
    return _stage_costs(model, lay.t, lay.t2, lay.p, stage, phased, lay.layers_per_stage)


@lru_cache(maxsize=4096)
def _stage_costs(model, t: int, t2: int, p: int, stage: int, phased: bool,
                 counts: tuple[int, ...] | None) -> tuple[tuple[Block, Cost], ...]:
    layers = _stage_layers(model, p, stage, counts)
    return tuple((block, cost(model, block, t, t2)) for block in stage_blocks(model, t, p, stage, phased, layers))


def cost(model, block: Block, t: int, t2: int = 1) -> Cost:
    if model.kind == "mlp":
        return _mlp(model, block, t)
    if model.kind == "transformer":
        return _transformer(model, block, t, t2)
    inputs, stored, _, params = model.unit(block.layers[0])
    return Cost(params, stored, inputs)


def _mlp(model, block: Block, t: int) -> Cost:
    # what vipu/sdk/nn/mlp.py caches: a pair its input whole, the first layer's pre-activation and activation split, the
    # second's pre-activation whole (after the allreduce); a single layer its input and pre-activation
    w = model.widths
    if block.kind == "pair":
        i, h, o = w[block.layers[0]], w[block.layers[1]], w[block.layers[1] + 1]
        return Cost((i * h + h) // t + h * o // t + o, i + 2 * h // t + o, i)
    i, o = w[block.layers[0]], w[block.layers[0] + 1]
    if block.kind == "row":
        return Cost(i * o // t + o, i // t + o, i)
    if block.kind == "col":
        return Cost((i * o + o) // t, i + o // t, i)
    return Cost(i * o + o, i + o, i)


def _transformer(model, block: Block, t: int, t2: int) -> Cost:
    # what vipu/sdk/nn/transformer.py caches (Korthikanti et al. 2022's count without dropout, whose masks and dropped
    # values the model has not): per layer norm its normalised input (s h) and inverse deviation (s), and its
    # output, the next matrix's input (s h); attention Q, K, V and the context (4 s h / t) and the probabilities
    # (a s^2 / t); the feed-forward's ReLU input and output (2 f s h / t)
    # (with t2 = 1: 4h^2 / t + 3h / t + 3h, Megatron's count) a layer norm keeps its normalised input s h / t2
    s, h, a, f = model.seq_len, model.hidden, model.heads, model.ffn_multiplier
    attention = Cost(4 * h * h // (t * t2) + 3 * h // t + 3 * h // t2,
                     s * h * (2 / t2 + 4 / t) + s + a * s * s / t, s * h / t2)
    ffn = Cost(2 * f * h * h // (t * t2) + f * h // t + 3 * h // t2, s * h * (2 / t2 + 2 * f / t) + s, s * h / t2)
    if block.kind == "attention":
        return attention
    if block.kind == "ffn":
        return ffn
    if block.kind == "layer":
        return Cost(attention.params + ffn.params, attention.activations + ffn.activations, s * h / t2)
    # the embedding (split t ways over the vocabulary, t2 over the hidden axis) takes token ids, its layer norm
    # keeps what any layer norm keeps; the head takes the last layer's output and keeps it and the logits, split t
    # ways over the vocabulary
    return Cost(model.embedding_params // (t * t2), 2 * s * h / t2 + s + s * model.vocab / t, s + s * h / t2)
