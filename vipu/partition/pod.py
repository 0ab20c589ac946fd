"""The Pod a controller manages, as a pydantic config: presets bow-pod16/64/128/256, or a site's own file.

The figures live in presets/*.yaml with their standing (seed, documented, quoted, derived, assumption) in a comment
beside each; this module only defines their shape and the rules that make a Pod coherent.
"""

from __future__ import annotations

from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from vipu.documents import read_document
from vipu.errors import InvalidArgument
from vipu.partition.admin_objects import ClusterTopology
from vipu.validation import describe

# V-IPU: one IPU-Link domain holds at most 64 IPUs; bigger partitions span domains over GW-Links.
MAX_ILD_IPUS = 64


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IpuSpec(Strict):
    tiles: PositiveInt
    sram_per_tile_bytes: PositiveInt
    clock_hz: PositiveFloat
    fp16_flops_per_tile_cycle: PositiveInt
    fp32_flops_per_tile_cycle: PositiveInt
    threads_per_tile: PositiveInt
    exchange_bytes_per_s: PositiveFloat
    sram_bytes_per_s: PositiveFloat
    sync_s: PositiveFloat

    @property
    def sram_bytes(self) -> int:
        return self.tiles * self.sram_per_tile_bytes

    def flops_per_s(self, dtype: str = "fp16") -> float:
        per_cycle = self.fp16_flops_per_tile_cycle if dtype == "fp16" else self.fp32_flops_per_tile_cycle
        return self.tiles * per_cycle * self.clock_hz


class MachineSpec(Strict):
    ipus: PositiveInt
    streaming_memory_bytes: PositiveFloat
    streaming_memory_bytes_per_s: PositiveFloat
    streaming_memory_latency_s: PositiveFloat


class LinkSpec(Strict):
    bytes_per_s: PositiveFloat = Field(description="per link, per direction")
    latency_s: PositiveFloat


class GwLinkSpec(LinkSpec):
    links_per_machine: PositiveInt


LINK_TYPES = ("ipu_link", "gw_link")  # LinksSpec's fields: the link kinds traffic and errors are counted by


class LinksSpec(Strict):
    ipu_link: LinkSpec
    gw_link: GwLinkSpec


class PodConfig(Strict):
    """A Pod: `ilds` IPU-Link domains of `machines_per_ild` machines each, joined by GW-Links."""

    name: str = Field(min_length=1, max_length=64)
    machine_preset: str | None = Field(
        default=None, description="take ipu, machine and links from this preset (e.g. bow-2000) unless given here"
    )
    ipu: IpuSpec
    machine: MachineSpec
    links: LinksSpec
    ilds: PositiveInt
    machines_per_ild: PositiveInt
    ild_topology: Literal["torus", "mesh"]
    cluster_topology: ClusterTopology = "looped"
    total_ipus: PositiveInt | None = Field(default=None, description="optional cross-check of the IPU count")

    @model_validator(mode="after")
    def _coherent(self) -> PodConfig:
        per_ild = self.machines_per_ild * self.machine.ipus
        if self.machine.ipus not in (2, 4):
            # topology.py's rings: the IPUs of a machine form a ring of their own (4) or a linked pair (2), and
            # blocks of whole machines are grids with a Hamiltonian cycle; other counts leave blocks without a ring
            raise ValueError(f"machine.ipus is {self.machine.ipus}: the IPU-Link layout needs 2 or 4 IPUs per machine")
        if per_ild & (per_ild - 1):
            raise ValueError(
                f"machines_per_ild x machine.ipus is {per_ild}: an IPU-Link domain must hold a power of two IPUs;"
                f" {self._machines_per_ild_fix()}"
            )
        if per_ild > MAX_ILD_IPUS:
            raise ValueError(
                f"machines_per_ild x machine.ipus is {per_ild}: an IPU-Link domain holds at most {MAX_ILD_IPUS} IPUs;"
                " use more ilds instead"
            )
        if self.ild_topology == "torus" and self.machines_per_ild < 3:
            raise ValueError(
                f"ild_topology is torus but machines_per_ild is {self.machines_per_ild}: a torus needs at least 3"
                " machines to wrap round; use mesh"
            )
        if self.total_ipus is not None and self.total_ipus != self.ipus:
            raise ValueError(
                f"total_ipus is {self.total_ipus} but ilds x machines_per_ild x machine.ipus is {self.ipus};"
                " make them agree"
            )
        return self

    def _machines_per_ild_fix(self) -> str:
        """The machines_per_ild values nearest the given one that make a whole IPU-Link domain (with 2 or 4 IPUs per
        machine, a power of two of machines), within 64 IPUs and, for a torus, at least 3 machines."""
        ipus, given = self.machine.ipus, self.machines_per_ild
        below = 1 << (given.bit_length() - 1)
        fits = [n for n in (below, below * 2)
                if n * ipus <= MAX_ILD_IPUS and (self.ild_topology != "torus" or n >= 3)]
        if not fits:
            fits = [MAX_ILD_IPUS // ipus]
        sizes = " or ".join(str(n * ipus) for n in fits)
        return f"set machines_per_ild to {' or '.join(map(str, fits))} ({sizes} IPUs a domain)"

    @property
    def ild_ipus(self) -> int:
        return self.machines_per_ild * self.machine.ipus

    @property
    def machines(self) -> int:
        return self.ilds * self.machines_per_ild

    @property
    def ipus(self) -> int:
        return self.machines * self.machine.ipus

    @cached_property
    def max_partition_ipus(self) -> int:
        """Largest power of two that fits: a partition of whole ILDs needs a power-of-two number of them."""
        size = 1
        while size * 2 <= self.ipus:
            size *= 2
        return size


PRESETS = ("bow-pod16", "bow-pod64", "bow-pod128", "bow-pod256")


def _preset_text(name: str) -> str:
    return resources.files("vipu.partition").joinpath("presets", f"{name}.yaml").read_text()


def _known_preset(name: str) -> bool:
    return resources.files("vipu.partition").joinpath("presets", f"{name}.yaml").is_file()


def parse_pod(data: object, source: str) -> PodConfig:
    """Validate a Pod description (already parsed YAML/JSON); `source` names it in error messages."""
    if data is None:
        raise InvalidArgument(f"invalid pod config {source}: it is empty; give name, ilds, machines_per_ild, ...")
    if not isinstance(data, dict):
        raise InvalidArgument(f"invalid pod config {source}: expected a mapping of fields, got {type(data).__name__}")
    data = dict(data)
    preset = data.get("machine_preset")
    if preset is not None:
        if not isinstance(preset, str) or not _known_preset(preset) or preset.startswith("bow-pod"):
            raise InvalidArgument(
                f"invalid pod config {source}: machine_preset {preset!r} is not a machine preset; use bow-2000"
                " or give ipu, machine and links inline"
            )
        hardware = yaml.safe_load(_preset_text(preset))
        for section, value in hardware.items():
            data.setdefault(section, value)
    try:
        return PodConfig.model_validate(data)
    except ValidationError as e:
        raise InvalidArgument(describe(e, f"pod config {source}")) from None


def load_pod(name_or_path: str, given_as: str = "--pod") -> PodConfig:
    """A preset name (bow-pod64) or the path of a YAML/JSON file describing a site's own Pod; `given_as` is where
    the user wrote it (a flag, or a spec's field), for the refusal."""
    if name_or_path in PRESETS:
        return parse_pod(yaml.safe_load(_preset_text(name_or_path)), name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise InvalidArgument(
            f"{given_as} {name_or_path!r} is neither a preset ({', '.join(PRESETS)}) nor a readable file;"
            " pick a preset or give the path of a pod config"
        )
    try:
        text = path.read_text()
    except UnicodeDecodeError as e:
        raise InvalidArgument(f"invalid pod config {path}: not UTF-8 text (bad byte at offset {e.start}); give a"
                              " YAML or JSON file") from None
    return parse_pod(read_document(text, f"pod config {path}", as_json=path.suffix == ".json" or None), str(path))
