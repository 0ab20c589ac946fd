"""The figures of the chip, the machine and the links, as a preset gives them (presets/bow-2000.yaml).

Each is a frozen pydantic model whose fields are the figures a Pod config states; the standing of every figure
(seed, documented, quoted, derived, assumption) is in a comment beside it in the preset. What the figures mean
together, as seconds and bytes, lives in the modules that price the work: links.py, bsp_cost.py, streaming_cost.py.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from vipu.spec_numbers import Count, PositiveNumber

IPU_LINK = "ipu_link"  # the link types, named as LinksSpec's fields and the machine actors' counters name them
GW_LINK = "gw_link"
LINK_TYPES = (IPU_LINK, GW_LINK)  # the link kinds traffic and errors are counted by


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IpuSpec(Strict):
    tiles: Count
    sram_per_tile_bytes: Count
    clock_hz: PositiveNumber
    fp16_flops_per_tile_cycle: Count
    fp32_flops_per_tile_cycle: Count
    threads_per_tile: Count
    exchange_bytes_per_s: PositiveNumber
    sram_bytes_per_s: PositiveNumber
    sync_s: PositiveNumber

    @property
    def sram_bytes(self) -> int:
        return self.tiles * self.sram_per_tile_bytes

    def flops_per_tile_cycle(self, dtype: str = "fp16") -> int:
        return self.fp16_flops_per_tile_cycle if dtype == "fp16" else self.fp32_flops_per_tile_cycle

    def flops_per_s(self, dtype: str = "fp16") -> float:
        return self.tiles * self.flops_per_tile_cycle(dtype) * self.clock_hz

    @property
    def reduce_s_per_byte(self) -> float:
        """gamma, the time to add one received byte into a tensor: 3 bytes of SRAM traffic per byte (read two
        operands, write one) at sram_bytes_per_s, *derived* from the seed's 65 TB/s on the *assumption* that the
        addition is SRAM-bound."""
        return 3.0 / self.sram_bytes_per_s


class MachineSpec(Strict):
    ipus: Count
    streaming_memory_bytes: PositiveNumber
    streaming_memory_bytes_per_s: PositiveNumber
    streaming_memory_latency_s: PositiveNumber


class LinkSpec(Strict):
    bytes_per_s: PositiveNumber = Field(description="per link, per direction")
    latency_s: PositiveNumber


class GwLinkSpec(LinkSpec):
    links_per_machine: Count


class LinksSpec(Strict):
    ipu_link: LinkSpec
    gw_link: GwLinkSpec
