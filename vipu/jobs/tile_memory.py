"""Memory as a compiler sees it: the stage's tensors mapped onto the compute tiles, the fullest tile deciding.

An IPU has no shared memory (hardware.md): a program fits only if every tile's share fits that tile's 624 KiB.
What a tile holds at the step's peak, per IPU of the stage needing most (memory_estimate.py's parts):
- the compute tiles: all but the layout's io_tiles, which only stream data (PopXL's io_tiles; they hold none of
  the model's tensors);
- the code and exchange reserve on every compute tile: assumptions.reserved_sram_fraction of its SRAM (vertex code
  and state, exchange buffers: not published, Poplar profiles of large models commonly show 10-25%);
- always-live tensors: weights, gradient accumulators and optimiser state held in SRAM;
- not-always-live at the peak: the activations held for the backward pass, and the temporaries of the largest
  matmul. Poplar's matmul planner keeps a matmul's temporaries within available_memory_proportion of each tile
  (default 0.6: docs.graphcore.ai/projects/available-memory, "Optimising Temporary Memory Usage for Convolutions
  and Matmuls on the IPU"), trading cycles for memory; the temporaries are taken as the largest block's
  activations of one micro-batch spread over the compute tiles (an assumption), capped there.
Mapping (an assumption, poputil::mapTensorLinearly's way): each tensor is spread linearly over the compute tiles
from the first, in grains of MAPPING_GRAIN bytes, so a tensor whose grains do not divide by the tiles puts one
grain more on its first tiles, and one smaller than the tiles' grains sits on its first tiles only: tile 0 holds
the most, and its bytes decide the fit, not the IPU's bytes / tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

MAPPING_GRAIN = 64  # bytes of a tensor mapped onto a tile at once (assumption: 32 fp16 values)
FULLEST = 3  # the fullest tiles the report lists


@dataclass(frozen=True)
class TileTensor:
    label: str
    nbytes: float
    row_bytes: float
    always_live: bool

    def rows(self) -> int:
        return max(1, round(self.nbytes / self.row_bytes)) if self.nbytes > 0 else 0

    def on_tile(self, tile: int, tiles: int) -> float:
        """Bytes of this tensor on `tile` of `tiles` compute tiles (linear mapping from tile 0, whole rows)."""
        rows = self.rows()
        per, extra = divmod(rows, tiles)
        return min(self.nbytes, (per + (1 if tile < extra else 0)) * self.row_bytes)


class TileMemory(BaseModel):
    """The tile-level view of one IPU of the stage needing most."""

    model_config = ConfigDict(frozen=True)

    compute_tiles: int
    tile_bytes: int
    reserve: float  # per compute tile
    temporaries: float  # per tile, the largest matmul's, capped at available_memory_proportion
    always_live: float  # on the fullest tile
    not_always_live: float  # on the fullest tile: activations and temporaries
    peak: float  # the fullest tile: reserve + always-live + not-always-live

    @property
    def fits(self) -> bool:
        return self.peak <= self.tile_bytes


def stage_tensors(parts, blocks: list[tuple[str, float, float]]) -> list[TileTensor]:
    """The tensors of a stage's IPU: `parts` (a StageMemory) for the always-live ones; `blocks`, (label, weight
    bytes, activation bytes of one micro-batch) of the blocks whose activations are held."""
    tensors = [TileTensor(label, nbytes, MAPPING_GRAIN, True) for label, nbytes in (
        ("weights", parts.weights), ("gradient accumulators", parts.gradients), ("optimiser state", parts.optimizer))
        if nbytes > 0]
    held = sum(nbytes for _, _, nbytes in blocks)
    scale = parts.activations / held if held else 0.0  # micro-batches in flight, or recomputation's checkpoints
    tensors += [TileTensor(f"activations: {label}", nbytes * scale, MAPPING_GRAIN, False)
                for label, _, nbytes in blocks if nbytes > 0]
    return tensors


def tile_memory(tensors: list[TileTensor], largest_activations: float, layout, pod, reserved_fraction: float
                ) -> TileMemory:
    tiles = pod.ipu.tiles - layout.io_tiles
    tile_bytes = pod.ipu.sram_per_tile_bytes
    reserve = reserved_fraction * tile_bytes
    temporaries = min(largest_activations / tiles, layout.available_memory_proportion * tile_bytes)
    always = sum(t.on_tile(0, tiles) for t in tensors if t.always_live)
    held = sum(t.on_tile(0, tiles) for t in tensors if not t.always_live)
    return TileMemory(compute_tiles=tiles, tile_bytes=tile_bytes, reserve=reserve, temporaries=temporaries,
                      always_live=always, not_always_live=held + temporaries,
                      peak=reserve + always + held + temporaries)


def per_tile(tensors: list[TileTensor], memory: TileMemory) -> list[float]:
    """Every compute tile's bytes at the peak (for the report's histogram)."""
    base = memory.reserve + memory.temporaries
    out = [base] * memory.compute_tiles
    for tensor in tensors:
        rows = tensor.rows()
        per, extra = divmod(rows, memory.compute_tiles)
        low = min(tensor.nbytes, per * tensor.row_bytes)
        high = min(tensor.nbytes, (per + 1) * tensor.row_bytes)
        for tile in range(memory.compute_tiles):
            out[tile] += high if tile < extra else low
    return out


def report(tensors: list[TileTensor], memory: TileMemory, buckets: int = 8) -> list[str]:
    """`vipu plan --memory-report`: a histogram of the compute tiles by their bytes at the peak (buckets spanning
    the emptiest to the fullest tile, so an imbalance of a few bytes shows), then the fullest tiles and what fills
    them."""
    fills = per_tile(tensors, memory)
    cap = memory.tile_bytes
    low, high = min(fills), max(fills)
    lines = [f"per-tile memory at the peak ({memory.compute_tiles:,} compute tiles of {cap / 1024:,.0f} KiB;"
             f" emptiest {low / 1024:,.2f} KiB, fullest {high / 1024:,.2f} KiB, {high / cap:.0%} of a tile)"]
    width = (high - low) / buckets
    counts = [0] * buckets
    for nbytes in fills:
        counts[min(buckets - 1, int((nbytes - low) / width)) if width else 0] += 1
    most = max(counts)
    for i, count in enumerate(counts):
        if count:
            start = low + i * width
            label = f"{start / 1024:,.2f}-{(start + width) / 1024:,.2f} KiB" if width else f"{low / 1024:,.2f} KiB"
            lines.append(f"  {label:<24} {count:>6,} tiles {'#' * max(1, round(40 * count / most))}")
    order = sorted(range(len(fills)), key=lambda tile: (-fills[tile], tile))[:FULLEST]
    lines.append("fullest tiles")
    for tile in order:
        parts = [("code and exchange", memory.reserve), ("matmul temporaries", memory.temporaries)]
        parts += [(t.label, t.on_tile(tile, memory.compute_tiles)) for t in tensors]
        top = ", ".join(f"{label} {nbytes / 1024:,.2f}" for label, nbytes in
                        sorted(parts, key=lambda item: -item[1]) if nbytes > 0)
        lines.append(f"  tile {tile:>5}: {fills[tile] / 1024:>8,.2f} KiB ({fills[tile] / cap:.0%}): {top} KiB")
    return lines
