"""The control plane of a Pod16 in process, with no loop thread (tests call plane.step()), closed after the test."""

from __future__ import annotations

import pytest

from vipu.control.startup import open_plane


@pytest.fixture
def plane(tmp_path):
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    yield plane
    plane.stop()
    plane.store.close()
