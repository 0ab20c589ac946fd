"""A train job running when the controller died lost its steps: after the restart it ends NODE_FAIL and goes back
to the queue only if its spec allows requeueing, as a job whose partition was lost does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState
from vipu.control.startup import open_plane
from vipu.jobs.train.runs import TrainRuns

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_dp.yaml"


@pytest.mark.parametrize("requeue,after", [(True, JobState.PENDING), (False, JobState.NODE_FAIL)])
def test_a_running_train_job_is_requeued_only_if_its_spec_allows(tmp_path, monkeypatch, requeue, after):
    monkeypatch.setattr(TrainRuns, "start", lambda *args, **kwargs: None)  # the process "dies" before training runs
    rt = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    spec = parse_spec({**yaml.safe_load(EXAMPLE.read_text()), "requeue": requeue})
    with rt.lock:
        [job] = rt.scheduler.submit(spec, rt.now())
    rt.step()
    assert rt.scheduler.job(job.id).state is JobState.RUNNING
    rt.store.close()  # nothing more is written: as after a SIGKILL

    again = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    recovered = again.scheduler.job(job.id)
    assert recovered.state is after
    assert JobState.NODE_FAIL in [t.state for t in recovered.history]
    assert f"slurm_{job.id}" not in again.controller.state.partitions  # its partition was removed
    again.store.close()
