"""Fixtures for the scheduler tests; the builders themselves live in builders.py."""

import pytest

from vipu.scheduler import cycle

from tests.scheduler.builders import RecordingJournal


@pytest.fixture
def journal() -> RecordingJournal:
    return RecordingJournal()


@pytest.fixture
def evaluations(monkeypatch):
    """Counts dependency evaluations made by cycles (the ids of the jobs evaluated)."""
    calls = []
    real = cycle.dependency_status

    def counting(sched, job, now):
        calls.append(job.id)
        return real(sched, job, now)

    monkeypatch.setattr(cycle, "dependency_status", counting)
    return calls
