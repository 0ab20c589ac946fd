"""Builders and fixtures for the partition-domain tests: pods, a fake clock, a recording journal, scenes.

A *scene* is a Controller with a fake clock and a recording journal, built fluently:

    scene("bow-pod64").partition("p1", 16).held("p1", "job-1").failed([3])

Every test module gets these through fixtures (`make_scene`, `pods`, ...), so nothing imports this file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache

import pytest

from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod, parse_pod
from vipu.partition.controller import Controller
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.pod_state import KINDS, PodState

PRESET_NAMES = ("bow-pod16", "bow-pod64", "bow-pod128", "bow-pod256")
SITE_8ILD = "site-8ild"


def site_pod_data(**overrides) -> dict:
    """A site's own Pod description: 8 torus IPU-Link domains of 8 Bow-2000s (256 IPUs in domains of 32, which no
    preset has).

    Keyword arguments replace fields; a value of None deletes the field."""
    data = {
        "name": SITE_8ILD,
        "machine_preset": "bow-2000",
        "ilds": 8,
        "machines_per_ild": 8,
        "ild_topology": "torus",
        "cluster_topology": "switched",
    }
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@lru_cache(maxsize=None)
def get_pod(name: str) -> PodConfig:
    """A preset by name, or the 8-ILD site pod; PodConfig is frozen, so sharing one is safe."""
    if name == SITE_8ILD:
        return parse_pod(site_pod_data(), f"{SITE_8ILD}.yaml")
    return load_pod(name)


class FakeClock:
    def __init__(self, start: float = 1000.0):
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, dt: float = 1.0) -> float:
        self.t += dt
        return self.t


class RecordingJournal:
    """A Journal that keeps every commit, and the records as JSON the way the real store does."""

    def __init__(self):
        self.commits: list[tuple[list[tuple[str, str, str]], list[tuple[str, str]]]] = []
        self.docs: dict[tuple[str, str], str] = {}

    def commit(self, puts, deletes) -> None:
        puts = [(kind, name, record.model_dump_json()) for kind, name, record in puts]
        deletes = list(deletes)
        self.commits.append((puts, deletes))
        for kind, name, doc in puts:
            self.docs[(kind, name)] = doc
        for key in deletes:
            self.docs.pop(key, None)

    def records(self) -> list[tuple[str, object]]:
        """What a restarted controller reads back: every live record, re-validated from its JSON."""
        return [(kind, KINDS[kind].model_validate_json(doc)) for (kind, _), doc in sorted(self.docs.items())]


def snapshot(state: PodState) -> dict:
    """Everything the controller knows, as plain data, to compare before and after an operation."""
    tables = {kind: {name: r.model_dump() for name, r in state.table(kind).items()} for kind in KINDS}
    return copy.deepcopy({**tables, "failed_ipus": set(state.failed_ipus), "used_mask": state.used_mask})


@dataclass
class Scene:
    """A controller under test with its clock and journal; the builder methods return the scene."""

    pod: PodConfig
    clock: FakeClock = field(default_factory=FakeClock)
    journal: RecordingJournal = field(default_factory=RecordingJournal)
    ctl: Controller = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.ctl is None:
            self.ctl = Controller(self.pod, self.journal, self.clock.now)

    @property
    def state(self) -> PodState:
        return self.ctl.state

    def partition(self, name: str, size: int, **fields) -> Scene:
        self.ctl.partitions.create(request(name, size, **fields))
        return self

    def held(self, name: str, holder: str) -> Scene:
        self.ctl.partitions.acquire(name, holder)
        return self

    def failed(self, ipus: list[int]) -> Scene:
        self.ctl.partitions.fail_ipus(ipus)
        return self

    def allocation(self, name: str, agents: list[str]) -> Scene:
        self.ctl.admin.create_allocation(name, agents)
        return self

    def restarted(self) -> Scene:
        """A new controller built from the journal's records, as vipu-server does at start-up."""
        journal = RecordingJournal()
        journal.docs = dict(self.journal.docs)
        ctl = Controller(self.pod, journal, self.clock.now, self.journal.records())
        return Scene(self.pod, self.clock, journal, ctl)


def request(name: str, size: int, **fields) -> PartitionRequest:
    return PartitionRequest(name=name, size=size, **fields)


def make_scene(pod: str | PodConfig = "bow-pod64") -> Scene:
    return Scene(get_pod(pod) if isinstance(pod, str) else pod)


# fixtures --------------------------------------------------------------------------------------------------------
# Session-scoped where they hand out stateless factories, so hypothesis tests may use them too.


@pytest.fixture(scope="session")
def scene_factory():
    return make_scene


@pytest.fixture(scope="session")
def pods():
    return get_pod


@pytest.fixture(scope="session")
def builders():
    """The plain helpers, for tests that need more than a scene (tables, snapshots, site pod files)."""

    class B:
        request = staticmethod(request)
        snapshot = staticmethod(snapshot)
        site_pod_data = staticmethod(site_pod_data)
        RecordingJournal = RecordingJournal
        FakeClock = FakeClock
        Scene = Scene

    return B
