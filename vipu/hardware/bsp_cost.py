"""What one IPU's share of a BSP compute set costs: its busiest tile's cycles, the sync, and its exchange.

An IPU runs bulk-synchronously (hardware.md): a compute set is compute (each tile on its own SRAM), a sync, then
exchange. These are the figures of that cost on one IPU, from the preset (pod.ipu and pod.links.ipu_link); how a
step's compute sets add up over its IPUs, and who waits for whom, is the BSP rules' (vipu/workers/bsp.py).
- compute: a tile's cycles = ceil(FLOPs / flops_per_tile_cycle of the dtype), or cycles given directly (a vertex's
  own estimate); an IPU's compute time = its busiest tile's cycles / clock_hz.
- sync: pod.ipu.sync_s on-chip. When any IPU of the compute set sends over IPU-Links the sync spans chips; that
  costs one more ipu_link.latency_s (assumption: Graphcore does not publish inter-IPU sync cost; one link hop is
  the smallest plausible figure and it is configurable through the preset's latency).
- exchange: on-chip bytes / exchange_bytes_per_s, plus, if it sends to other IPUs, ipu_link.latency_s + the largest
  send / ipu_link.bytes_per_s: each peer is assumed reached over its own direct IPU-Link, in parallel (a Bow IPU has
  10); routes over several hops are the fabric's business, not this cost's.
"""

from __future__ import annotations

import math
from typing import Mapping

from vipu.errors import InvalidArgument
from vipu.hardware.figures import IpuSpec, LinkSpec


def busiest_tile_cycles(values: float | list[float], tiles: int | None, per_cycle: int, ipu: IpuSpec) -> int:
    """The busiest tile's cycles for per-tile work `values` (FLOPs at `per_cycle` a cycle, or cycles with per_cycle
    1): one value per tile, or the same value on each of the first `tiles` tiles (None: all)."""
    if isinstance(values, list):
        if len(values) > ipu.tiles:
            raise InvalidArgument(f"{len(values)} per-tile values but an IPU has {ipu.tiles} tiles; give at most"
                                  f" {ipu.tiles}")
        busiest = max(values, default=0.0)
    else:
        tiles = ipu.tiles if tiles is None else tiles
        if tiles > ipu.tiles:
            raise InvalidArgument(f"tiles is {tiles} but an IPU has {ipu.tiles}; give at most {ipu.tiles}")
        busiest = values if tiles else 0.0
    return math.ceil(busiest / per_cycle)


def sync_s(ipu: IpuSpec, link: LinkSpec, spans_chips: bool) -> float:
    """The sync ending a compute set's compute: on-chip, plus one IPU-Link latency when the set sends to other IPUs."""
    return ipu.sync_s + (link.latency_s if spans_chips else 0.0)


def exchange_s(exchange_bytes: int, sends: Mapping[int, int], ipu: IpuSpec, link: LinkSpec) -> float:
    """One IPU's exchange: `exchange_bytes` between its own tiles, and sends[peer] bytes to each other IPU at once."""
    seconds = exchange_bytes / ipu.exchange_bytes_per_s
    if sends:
        seconds += link.latency_s + max(sends.values()) / link.bytes_per_s
    return seconds
