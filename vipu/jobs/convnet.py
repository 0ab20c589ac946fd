"""A ResNet-50-shaped convolutional network (224 x 224 images), for the data-parallel calibration benchmark.

Standing of its figures:
- parameters 25,557,032: documented (torchvision resnet50; "25.6M" in the ResNet paper's tables);
- forward FLOPs 8.2 G per image: quoted ("3.8-4.1 GFLOPs", which count multiply-adds; 2 FLOPs each);
- 161 parameter tensors: derived (53 convolutions, 53 batch norms with gain and bias, the classifier's weight and
  bias);
- distributed batch norm (batch_norm_replicas > 1, the TensorFlow 1 application's BN_span / micro-batch): every
  batch norm sums its per-channel mean and variance over a group of replicas, one small allreduce per batch norm
  and pass (forward, recomputed forward, backward); 26,560 channels over the 53 batch norms, derived below;
- activations: derived below from the architecture (v1.5: stride in the 3x3 convolution), counting for every
  convolution its output (kept for the batch norm's backward) and the ReLU output after it (the next
  convolution's input); the units a pipeline can split between are the stem and the 16 bottleneck blocks, with
  the classifier folded into the last block.
Tensor sharding is not modelled for it (t must be 1): Graphcore runs it data-parallel, one replica per IPU.
"""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar, Literal

from pydantic import Field

from vipu.jobs.models import _Model
from vipu.spec_numbers import Count

PARAMS = 25_557_032
PARAM_TENSORS = 161
FORWARD_FLOPS = 8.2e9
IMAGE = 224 * 224 * 3
STAGES = ((3, 64, 56), (4, 128, 28), (6, 256, 14), (3, 512, 7))  # (blocks, width, output side)
STAT_BYTES = 4  # batch-norm statistics are summed in fp32


def _batch_norm_channels() -> list[int]:
    """Channels of each batch norm: the stem's, then per block its three convolutions' and the shortcut's."""
    channels = [64]
    for blocks, width, _ in STAGES:
        for i in range(blocks):
            channels += [width, width, 4 * width] + ([4 * width] if i == 0 else [])
    return channels


def _units() -> list[tuple[int, int, int, int]]:
    """(input elements, stored elements, output elements, parameters) of the stem and each bottleneck block."""
    stem_out = 112 * 112 * 64
    pooled = 56 * 56 * 64
    units = [(IMAGE, 2 * stem_out + pooled, pooled, 7 * 7 * 3 * 64)]
    channels = 64
    for blocks, width, side in STAGES:
        for i in range(blocks):
            area = side * side
            convs = [area * width, area * width, area * 4 * width] + ([area * 4 * width] if i == 0 else [])
            params = channels * width + 9 * width * width + 4 * width * width + (channels * 4 * width if i == 0 else 0)
            units.append((units[-1][2], 2 * sum(convs), area * 4 * width, params))
            channels = 4 * width
    return units


class ConvNetModel(_Model):
    kind: Literal["resnet50"] = "resnet50"
    batch_norm_replicas: Count = Field(
        1, le=1 << 16, description="replicas whose batch-norm statistics are pooled (distributed batch norm; 1:"
        " each replica its own). Graphcore's ResNet-50 configs pool pairs (BN_span 40 = 2 x micro-batch 20)")

    tp_allreduces_per_layer: ClassVar[float] = 0

    @cached_property
    def _table(self) -> list[tuple[int, int, int, int]]:
        return _units()

    @property
    def units(self) -> int:
        return len(self._table)

    def unit(self, i: int) -> tuple[int, int, int, int]:
        """(input elements, stored elements, output elements, parameters) of unit i per image; the last unit's
        parameters include what the table leaves out of PARAMS (the classifier, the batch norms)."""
        inputs, stored, out, params = self._table[i]
        rest = PARAMS - sum(params for _, _, _, params in self._table) if i == self.units - 1 else 0
        return inputs, stored, out, params + rest

    def params(self) -> int:
        return PARAMS

    def param_tensors(self) -> int:
        return PARAM_TENSORS

    def forward_flops(self) -> float:
        return FORWARD_FLOPS

    def input_bytes(self) -> float:
        """An image as the host sends it: 8 bits a channel (assumption: the TensorFlow 1 application's eight-bit
        I/O, normalised on the IPU)."""
        return float(IMAGE)

    def boundary_bytes(self, b: int) -> float:
        return b * max(out for _, _, out, _ in self._table) * self.value_bytes

    def tp_bytes(self, b: int) -> float:
        return 0.0

    @property
    def norm_replicas(self) -> int:
        return self.batch_norm_replicas

    def norm_allreduces(self) -> tuple[int, float]:
        if self.batch_norm_replicas == 1:
            return 0, 0.0
        channels = _batch_norm_channels()
        return len(channels), 2 * sum(channels) * STAT_BYTES  # a mean and a variance per channel

    def shard_problem(self, t: int) -> str | None:
        if t != 1:
            return f"t is {t}, but tensor sharding of the resnet50 model is not modelled; use t: 1 (data parallel)"
        return None
