"""Job records to protobuf: a brief listing leaves out what a table does not show, and nothing else."""

from __future__ import annotations

import json

from vipu.client.messages import to_data
from vipu.hardware.pod_files import load_pod
from vipu.scheduler.scheduler import Scheduler
from vipu.server import job_convert


def test_brief_jobs_leave_out_only_the_spec_and_the_detail():
    s = Scheduler(load_pod("bow-pod16"))
    s.submit({"name": "a", "ipus": 4, "time_limit": "10m", "hold": True}, 0.0)
    job = list(s.view().queue())[0]
    full, brief = job_convert.job(job), job_convert.job(job, brief=True)
    assert full.spec.name == "a" and to_data(full.detail)["history"]
    assert json.loads(full.spec_json)["name"] == "a" and json.loads(full.detail_json)["history"]  # deprecated
    assert not brief.HasField("spec") and not brief.HasField("detail")
    assert brief.spec_json == "" and brief.detail_json == ""
    for name in ("spec", "detail", "spec_json", "detail_json"):
        full.ClearField(name)
    assert brief == full  # every other field the same
    assert [x.reason for x in job_convert.jobs([job], brief=True).jobs] == ["JobHeldUser"]


def test_placement_adds_only_the_partition_nice_and_first_ipu_and_the_spec_message_is_shared():
    s = Scheduler(load_pod("bow-pod16"))
    for n in range(2):  # the same spec twice: one message serves both
        s.submit({"name": "a", "ipus": 4, "time_limit": "10m", "allocation": "a1", "nice": 5}, 0.0)
    s.submit({"name": "b", "ipus": 4, "time_limit": "10m"}, 0.0)
    s.cycle(0.0)
    first, second, other = sorted(s.view().queue(), key=lambda x: x.id)
    assert other.first_ipu is not None  # started: it has IPUs
    placed = job_convert.job(first, brief=True, placement=True)
    assert placed.spec == type(placed.spec)(allocation="a1", nice=5) and placed.spec_json == ""
    assert job_convert.job(other, brief=True, placement=True).detail.first_ipu == other.first_ipu
    assert placed.detail == type(placed.detail)(first_ipu=first.first_ipu) and placed.detail_json == ""
    placed.ClearField("spec")
    placed.ClearField("detail")
    assert placed == job_convert.job(first, brief=True)  # nothing else
    full = [job_convert.job(x) for x in (first, second, other)]
    assert [to_data(m.spec) for m in full] == [to_data(job_convert.to_message(x.spec.model_dump(), type(m.spec)()))
                                                for x, m in zip((first, second, other), full)]
    assert full[0].spec == full[1].spec != full[2].spec
