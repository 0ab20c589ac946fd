"""Fixtures for the machine tests: the bow-pod64 preset, small IPUs for exhaustive checks, and a MachinePool on the
session's Ray that is shut down (every actor killed) at the end of each test."""

from __future__ import annotations

import pytest

from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.workers.tile_sram import IpuMemory

TILE = 638_976  # bytes per tile in the bow-2000 preset (624 KiB)


@pytest.fixture(scope="session")
def pod() -> PodConfig:
    return load_pod("bow-pod64")


def small_ipu(tiles: int = 4, tile_bytes: int = 1000, label: str = "IPU 0") -> IpuMemory:
    return IpuMemory(tiles, tile_bytes, label)


@pytest.fixture
def pool(ray_session, pod):
    from vipu.workers.pool import MachinePool

    machines = MachinePool(pod)
    yield machines
    machines.shutdown()
