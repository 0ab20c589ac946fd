"""A modelled run (execute: false) in the controller, ended other than by its own end: lost IPUs end it NODE_FAIL
with the steps whose time had passed, it is requeued and runs again from its first step, and its record says it is
modelled before and after a controller restart."""

from __future__ import annotations

import pytest

from tests.server.test_training_logs import LOST, step_until
from vipu.control.startup import open_plane
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState

BERT = {"kind": "transformer", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 128, "vocab": 30400,
        "dtype": "fp16"}
LAYOUT = {"p": 4, "r": 4, "micro_batch": 8, "micro_batches": 64, "recompute": True, "rts": True,
          "offload_optimizer": True}
SCALE = 0.5  # BERT-Large's step here (micro_batches 64) is ~0.5 s: ~0.25 s a step


@pytest.fixture
def rt(tmp_path):
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090, modelled_time_scale=SCALE)
    yield plane
    plane.store.close()


def submit(rt, steps: int) -> int:
    spec = parse_spec({"name": "m", "ipus": 16, "time_limit": "5m", "workload": {
        "kind": "train", "model": BERT, "layout": LAYOUT, "steps": steps, "execute": False}})
    with rt.lock:
        [job] = rt.scheduler.submit(spec, rt.now())
    return job.id


def test_lost_ipus_end_it_node_fail_and_the_requeued_run_starts_afresh(rt, tmp_path):
    runs = rt.runners["train"]
    job = submit(rt, steps=1000)
    step_until(rt, lambda: runs.record(job) is not None and runs.record(job).modelled.steps_run >= 2)
    rt.fail_ipus([0], LOST)
    assert rt.scheduler.job(job).state is JobState.PENDING and rt.scheduler.job(job).requeue_count == 1
    record = runs.record(job)
    assert record.run == 1 and record.result.stopped and record.modelled.steps_run >= 2
    assert record.ended.startswith("run 1 ended NODE_FAIL at ") and record.ended.endswith("; requeued")

    rt.admin.repair_ipus([0])
    step_until(rt, lambda: rt.scheduler.job(job).state is JobState.RUNNING, timeout=10)
    lines = runs.log_lines(job)
    assert lines[0].startswith("modelled run (execute: false)") and lines[1] == record.ended
    again = runs.record(job)
    assert again.run == 2 and again.modelled.steps_run < record.modelled.steps_run + 2  # from its first step

    runs.shutdown()  # the controller stops under run 2: the restart ends it NODE_FAIL, its record still modelled
    rt.store.close()
    restarted = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090, modelled_time_scale=SCALE)
    try:
        assert restarted.scheduler.job(job).state is JobState.PENDING  # requeued again
        after = restarted.runners["train"].record(job)
        assert after.run == 2 and after.modelled is not None and after.modelled.time_scale == SCALE
        lines = restarted.runners["train"].log_lines(job)
        assert lines[0].startswith("modelled run (execute: false)") and lines[1] == record.ended
        assert lines[-1].startswith("run 2 ended NODE_FAIL at ") and "the controller stopped" in lines[-1]
    finally:
        restarted.store.close()
