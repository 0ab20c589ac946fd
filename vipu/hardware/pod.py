"""The Pod a controller manages, as a pydantic config: how many machines, how they form IPU-Link domains, and the
figures of their chips, machines and links.

A Pod is given as a preset (bow-pod16/64/128/256/1024) or a site's own file (pod_files.py reads either); the figures
live in presets/*.yaml with their standing in a comment beside each, and their shape in figures.py. This module
holds the rules that make a Pod coherent, and what follows from its counts (IPUs, machines, largest partition).
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field, model_validator

from vipu.hardware.figures import IpuSpec, LinksSpec, MachineSpec, Strict
from vipu.spec_numbers import Count

# V-IPU: one IPU-Link domain holds at most 64 IPUs; bigger partitions span domains over GW-Links.
MAX_ILD_IPUS = 64
# The largest Pod Graphcore's datasheets name: Pod64 racks "going up to 1024 Bow Pod64 racks (64K Bow IPU
# processors)" (docs.graphcore.ai/projects/bow-pod256-datasheet). Beyond it nothing here has been measured.
MAX_POD_IPUS = 65_536

ClusterTopology = Literal["looped", "direct-attach", "switched"]  # how the Pod's machines are cabled (vipu-admin)


class PodConfig(Strict):
    """A Pod: `ilds` IPU-Link domains of `machines_per_ild` machines each, joined by GW-Links; both counts give a
    power of two IPUs, as every Graphcore Pod holds."""

    name: str = Field(min_length=1, max_length=64)
    machine_preset: str | None = Field(
        default=None, description="take ipu, machine and links from this preset (e.g. bow-2000) unless given here"
    )
    ipu: IpuSpec
    machine: MachineSpec
    links: LinksSpec
    ilds: Count
    machines_per_ild: Count
    ild_topology: Literal["torus", "mesh"]
    cluster_topology: ClusterTopology = "looped"
    total_ipus: Count | None = Field(default=None, description="optional cross-check of the IPU count")

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
        if self.ipus > MAX_POD_IPUS:
            raise ValueError(
                f"ilds x machines_per_ild x machine.ipus is {self.ipus:,}: a Pod holds at most {MAX_POD_IPUS:,} IPUs"
                f" (1,024 Pod64 racks, the largest Graphcore names); use at most {MAX_POD_IPUS // per_ild:,} ilds"
            )
        if self.ilds & (self.ilds - 1):
            # "The number of IPUs in an IPU-POD must be a power of 2" (docs.graphcore.ai/projects/
            # ipu-pod-getting-started/en/3.1.0/overview.html); with a power-of-two domain, so must the ilds be
            below = 1 << (self.ilds.bit_length() - 1)
            fits = [n for n in (below, below * 2) if n * per_ild <= MAX_POD_IPUS]
            raise ValueError(
                f"ilds is {self.ilds:,} ({self.ipus:,} IPUs): a Pod holds a power of two IPUs, so a power of two of"
                f" IPU-Link domains (1, 2, 4, 8, ... racks joined by GW-Links); set ilds to"
                f" {' or '.join(f'{n:,}' for n in fits)}"
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
