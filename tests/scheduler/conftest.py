"""Fixtures for the scheduler tests; the builders themselves live in builders.py."""

import pytest

from tests.scheduler.builders import RecordingJournal


@pytest.fixture
def journal() -> RecordingJournal:
    return RecordingJournal()
