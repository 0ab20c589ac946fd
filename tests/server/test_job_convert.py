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
