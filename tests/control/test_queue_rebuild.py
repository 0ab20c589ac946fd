"""A controller on Ray rebuilds its queue once Ray is connected (vipu/control/queue_rebuild.py): until then its store's
jobs are kept as loaded, and its metrics say nothing of the queue rather than that it is empty."""

from __future__ import annotations

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.control.queue_rebuild import recover_stored
from vipu.control.startup import open_plane
from vipu.metrics.collector import StateCollector
from vipu.scheduler.job_states import JobState

HELD = b'{"ipus": 1, "time_limit": "10m", "hold": true}'


def test_the_queue_waits_for_its_rebuild_and_is_not_scraped_empty_meanwhile(tmp_path):
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    [done] = plane.jobs.submit([SubmitRequest(HELD, {})], ANYONE)
    plane.stop()
    plane.store.close()
    later = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090, recover_later=True)
    try:
        assert later.scheduler.table.jobs == {}
        assert list(StateCollector(later).collect()) == []  # (Regression: 0 jobs of every state, as if all gone)
        recover_stored(later)
        assert later.scheduler.table.jobs[done.jobs[0].id].state is JobState.PENDING
        [jobs] = [f for f in StateCollector(later).collect() if f.name == "vipu_jobs"]
        assert {s.labels["state"]: s.value for s in jobs.samples}["PENDING"] == 1
        recover_stored(later)  # once only: the records are let go
        assert len(later.scheduler.table.jobs) == 1
    finally:
        later.stop()
        later.store.close()
