"""How a model's weights are cut over a t x p layout: layers to pipeline stages, and tensors to tensor shards.

Stages: the model's layers split into p contiguous runs, as even as possible (stage s gets layers
[L s / p, L (s+1) / p)), each cut into blocks. A block is what runs at once: recomputation keeps its input (the
checkpoint) and runs it again before its backward, and phased execution holds one block in SRAM at a time. The
built-in planner counts what each block holds (vipu/jobs/blocks.py), so the planner and every trainer see the same
blocks:
- MLP: a stage's consecutive layers in Megatron pairs; the odd layer out "row", "col" or "replicated" (below);
- transformer: one "layer" per layer; phased, an "attention" and an "ffn" block each; with a vocabulary (planned,
  never executed) the first stage also holds the "embedding" and takes as many fewer layers as it weighs;
- ResNet-50 (planned only): its "unit"s.

Tensor shards (Megatron-LM, Shoeybi et al. 2019), per stage:
- transformer layer: Q, K and V column-parallel by whole heads (shard k has heads [k a/t, (k+1) a/t)), the
  output projection row-parallel; the feed-forward's first matrix column-parallel, its second row-parallel; biases
  of row-parallel layers and the layer norms replicated. 2 allreduces forward (after each row-parallel matrix) and
  2 backward (of the gradient at each block's input); phased, its attention and feed-forward blocks take
  the same tensors, one allreduce each way each;
- MLP: consecutive layers of a stage in pairs, the first column-parallel, the second row-parallel ("pair": one
  allreduce forward, one backward). A stage's odd layer out is "row" parallel when its input width divides by t
  (allreduce forward, all-gather of the input gradient backward), else "col" parallel with gathered output when
  its output width does (all-gather forward, allreduce backward), else "replicated" (every shard computes it
  whole). With t = 1 the same blocks run with no collective at all.

Two-dimensional tensor parallelism (PopXL's GPT-3, t x t2 shards, k = k1 t2 + k2: t2 innermost): every matrix is
split along both of its axes, the hidden one t2 ways and the other (heads, feed-forward units) t ways; the biases
and layer norms along theirs (split_axes_2d). A stage's activations are then split t2 ways along the hidden axis
and identical across the t axis (vipu/sdk/nn/transformer2d.py).

A shard of a tensor is its k-th of t equal contiguous pieces along the split axis (None: the whole tensor). Each
IPU keeps its shards in one flat buffer (FlatLayout), which is what lives on the IPU and what the data-parallel
allreduce reduces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy only where arrays are: the planner (vipu plan, without numpy) uses the rest
    import numpy as np

__all__ = ["Block", "FlatLayout", "model_stage_layers", "piece", "split_axes", "split_axes_2d", "stage_axes",
           "stage_blocks", "stage_layers", "take", "unshard"]

_ATTENTION_SPLIT = {"wq": 1, "bq": 0, "wk": 1, "bk": 0, "wv": 1, "bv": 0, "wo": 0, "bo": None, "ln1.g": None,
                    "ln1.b": None}
_FFN_SPLIT = {"ln2.g": None, "ln2.b": None, "w1": 1, "b1": 0, "w2": 0, "b2": None}
_LAYER_SPLITS = {"layer": {**_ATTENTION_SPLIT, **_FFN_SPLIT}, "attention": _ATTENTION_SPLIT, "ffn": _FFN_SPLIT}
# (axis split t ways, axis split t2 ways): graphcore/examples nlp/gpt3_175B/popxl/modelling/attention.py and
# feed_forward.py (GPTSelfAttentionTP2D, GPTFeedForwardTP2D hf_mapping: shard2D of each matrix)
_ATTENTION_2D = {"wq": (1, 0), "bq": (0, None), "wk": (1, 0), "bk": (0, None), "wv": (1, 0), "bv": (0, None),
                 "wo": (0, 1), "bo": (None, 0), "ln1.g": (None, 0), "ln1.b": (None, 0)}
_FFN_2D = {"ln2.g": (None, 0), "ln2.b": (None, 0), "w1": (1, 0), "b1": (0, None), "w2": (0, 1), "b2": (None, 0)}
_LAYER_2D = {"layer": {**_ATTENTION_2D, **_FFN_2D}, "attention": _ATTENTION_2D, "ffn": _FFN_2D}
Axes2D = tuple  # (axis split t ways or None, axis split t2 ways or None)


@dataclass(frozen=True)
class Block:
    kind: str  # pair, row, col, replicated (MLP); layer, attention, ffn, embedding (transformer); unit
    layers: tuple[int, ...]


def stage_layers(units: int, p: int, stage: int) -> range:
    """Stage s of p gets layers [L s / p, L (s+1) / p): contiguous runs, as even as possible."""
    return range(units * stage // p, units * (stage + 1) // p)


def model_stage_layers(model, p: int, stage: int) -> range:
    """The stage's layers; with a vocabulary the embedding counts as e = embedding / layer parameters layers, so
    the first stage gets e fewer (rounded) and the rest share the layers evenly."""
    vocab = model.kind == "transformer" and model.vocab
    if not vocab:
        return stage_layers(model.units, p, stage)
    e = model.embedding_params / model.layer_params

    def edge(s: int) -> int:
        return 0 if s == 0 else min(model.layers, max(0, math.floor((model.layers + e) * s / p - e + 0.5)))

    return range(edge(stage), model.layers if stage == p - 1 else edge(stage + 1))


def stage_blocks(model, t: int, p: int, stage: int, phased: bool = False, layers: range | None = None) -> list[Block]:
    """The blocks of stage `stage` of p, for t tensor shards (phased: a transformer layer as two blocks); `layers`
    the stage's layers where they are not the even split (the planner's layers_per_stage)."""
    layers = model_stage_layers(model, p, stage) if layers is None else layers
    if model.kind == "resnet50":
        return [Block("unit", (i,)) for i in layers]
    if model.kind == "transformer":
        kinds = ("attention", "ffn") if phased else ("layer",)
        blocks = [Block(kind, (i,)) for i in layers for kind in kinds]
        return ([Block("embedding", ())] if model.vocab and stage == 0 else []) + blocks
    blocks, i = [], layers.start
    while i < layers.stop:
        if i + 1 < layers.stop:
            blocks.append(Block("pair", (i, i + 1)))
            i += 2
            continue
        n_in, n_out = model.widths[i], model.widths[i + 1]
        kind = "row" if n_in % t == 0 else "col" if n_out % t == 0 else "replicated"
        blocks.append(Block(kind, (i,)))
        i += 1
    return blocks


def split_axes(block: Block) -> dict[str, int | None]:
    """Each parameter of the block (full name) and the axis it is split along (None: replicated)."""
    if block.kind in _LAYER_SPLITS:
        return {f"l{block.layers[0]}.{name}": axis for name, axis in _LAYER_SPLITS[block.kind].items()}
    if block.kind == "pair":
        i, j = block.layers
        return {f"l{i}.w": 1, f"l{i}.b": 0, f"l{j}.w": 0, f"l{j}.b": None}
    (i,) = block.layers
    w, b = {"row": (0, None), "col": (1, 0), "replicated": (None, None)}[block.kind]
    return {f"l{i}.w": w, f"l{i}.b": b}


def split_axes_2d(block: Block) -> dict[str, Axes2D]:
    """Each parameter of a transformer block and its (t axis, t2 axis) under two-dimensional tensor parallelism."""
    return {f"l{block.layers[0]}.{name}": axes for name, axes in _LAYER_2D[block.kind].items()}


def piece(n: int, t: int, k: int) -> slice:
    return slice(n * k // t, n * (k + 1) // t)


def take(array: np.ndarray, axis: int | None | Axes2D, t: int, k: int, t2: int = 1) -> np.ndarray:
    """Shard k of t of `array` along `axis` (a contiguous copy; the whole array if axis is None); with a pair of
    axes, shard k = k1 t2 + k2 of t x t2: piece k1 of t along the first, piece k2 of t2 along the second."""
    import numpy as np

    if isinstance(axis, tuple):
        k1, k2 = divmod(k, t2)
        return take(take(array, axis[0], t, k1), axis[1], t2, k2)
    if axis is None:
        return np.array(array)
    index = [slice(None)] * array.ndim
    index[axis] = piece(array.shape[axis], t, k)
    return np.ascontiguousarray(array[tuple(index)])


def stage_axes(model, t: int, p: int, stage: int, order: list[str], t2: int = 1) -> dict[str, int | None | Axes2D]:
    """The stage's parameters in `order` (init_params' order) with their split axes (pairs when t2 > 1)."""
    axes: dict = {}
    for block in stage_blocks(model, t, p, stage):
        axes.update(split_axes_2d(block) if t2 > 1 else split_axes(block))
    return {name: axes[name] for name in order if name in axes}


def unshard(pieces: list[np.ndarray], axis: int | None | Axes2D, t2: int = 1) -> np.ndarray:
    """The whole tensor from its t shards (shard 0 if replicated); with a pair of axes from its t x t2 shards."""
    import numpy as np

    if isinstance(axis, tuple):
        rows = [unshard(pieces[k:k + t2], axis[1]) for k in range(0, len(pieces), t2)]
        return unshard(rows, axis[0])

    return np.array(pieces[0]) if axis is None else np.concatenate(pieces, axis=axis)


@dataclass(frozen=True)
class FlatLayout:
    """Named tensors packed one after another in a flat buffer."""

    entries: tuple[tuple[str, tuple[int, ...], int], ...]  # (name, shape, offset)
    size: int

    @classmethod
    def of(cls, shapes: dict[str, tuple[int, ...]]) -> FlatLayout:
        entries, offset = [], 0
        for name, shape in shapes.items():
            entries.append((name, tuple(shape), offset))
            offset += math.prod(shape)
        return cls(tuple(entries), offset)

    def pack(self, arrays: dict[str, np.ndarray], dtype="float32") -> np.ndarray:
        import numpy as np

        flat = np.empty(self.size, dtype=dtype)
        for name, view in self.views(flat).items():
            view[...] = arrays[name]
        return flat

    def views(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Each tensor as a view of `flat` (writes go through)."""
        out = {}
        for name, shape, offset in self.entries:
            size = math.prod(shape)
            out[name] = flat[offset:offset + size].reshape(shape)
        return out
