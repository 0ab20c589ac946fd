"""Every refusal of a submit's field carries BadRequest naming it (in SubmitJobs, with the spec's index); times
out of their protobuf range are refused naming the field; UpdateJob takes UNLIMITED and a typed begin; the default
allocation has a create_time. Against a real controller, as any gRPC client sees it."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from tests.conftest import ServerProcess
from tests.server.test_refusals import fields, refusal
from vipu.client import ApiError, Client
from vipu.client.messages import duration, seconds, timestamp
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc, partition_pb2 as p, partition_pb2_grpc
from vipu.v1 import job_spec_pb2 as s

SLEEP = s.Workload(sleep=s.SleepWorkload(duration=duration(600)))
OK = s.JobSpec(ipus=4, hold=True, workload=SLEEP)
QOS = "qos:\n  normal: {priority: 50, max_time_limit: 2h}\n  high: {priority: 100}\n"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refusals")
    config = folder / "scheduler.yaml"
    config.write_text(QOS)
    server = ServerProcess(state_dir=folder / "state", pod="bow-pod16", extra=["--scheduler-config", str(config)])
    server.start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield job_pb2_grpc.JobServiceStub(channel), partition_pb2_grpc.PartitionServiceStub(channel), server.port
    finally:
        server.kill()
        server.proc.stdout.close()


def violations(call) -> tuple[grpc.StatusCode, list[str], str]:
    code, found = refusal(call)
    described = [v.description for v in found["BadRequest"].field_violations] if "BadRequest" in found else []
    return code, fields(found), " ".join(described)


def text(**spec) -> bytes:
    return json.dumps({"ipus": 4, "hold": True, **spec}).encode()


# -- SubmitJobs: which spec ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, want", [
    (j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, time_limit=duration(-5), workload=SLEEP)),
     "jobs[2].spec.time_limit"),
    (j.SubmitJobRequest(spec=text(ipus=3)), "jobs[2].spec.ipus"),
    (j.SubmitJobRequest(spec=text(name="a\nb")), "jobs[2].spec.name"),
    (j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, time_limit=duration(5), time_limit_unlimited=True)),
     "jobs[2].job_spec.time_limit_unlimited"),
    (j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, time_limit=Duration(seconds=1, nanos=2_000_000_000))),
     "jobs[2].job_spec.time_limit"),
])
def test_a_refused_spec_of_several_is_named_by_its_index(stubs, bad, want):
    """Regression: a refusal of one spec in SubmitJobs carried no BadRequest, and a path without the index."""
    jobs, _, _ = stubs
    many = j.SubmitJobsRequest(jobs=[j.SubmitJobRequest(job_spec=OK), j.SubmitJobRequest(spec=text()), bad])
    code, paths, described = violations(lambda: jobs.SubmitJobs(many, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == [want], described
    assert described and "spec 3 of 3" not in described  # the fix, not the call's framing


def test_a_refusal_of_several_keeps_its_reason(stubs):
    jobs, _, _ = stubs
    many = j.SubmitJobsRequest(jobs=[j.SubmitJobRequest(spec=text(), request_id="r1"),
                                     j.SubmitJobRequest(spec=text(), request_id="r1")])
    code, found = refusal(lambda: jobs.SubmitJobs(many, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["ErrorInfo"].reason == "INVALID_FIELD"
    assert fields(found) == ["jobs[1].request_id"]


# -- every submit field ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, want", [
    ({"name": "a\tb"}, "spec.name"),
    ({"name": ""}, "spec.name"),
    ({"name": "x" * 1025}, "spec.name"),
    ({"user": "bad user"}, "spec.user"),
    ({"account": "a/b"}, "spec.account"),
    ({"qos": ""}, "spec.qos"),
    ({"qos": "nosuch"}, "spec.qos"),
    ({"ipus": 3}, "spec.ipus"),
    ({"ipus": 64}, "spec.ipus"),
    ({"time_limit": "3h"}, "spec.time_limit"),
    ({"time_limit": "90"}, "spec.time_limit"),
    ({"array": "5-1"}, "spec.array"),
    ({"dependency": "afterok:999"}, "spec.dependency"),
    ({"dependency": "whenever"}, "spec.dependency"),
    ({"begin": "10m"}, "spec.begin"),
    ({"begin": 1e13}, "spec.begin"),
    ({"output": "relative.out"}, "spec.output"),
    ({"error": "/tmp/e", "workload": {"kind": "sleep", "duration": 1}}, "spec.error"),
    ({"nice": 100_000}, "spec.nice"),
    ({"workload": {"kind": "nosuch"}}, "spec.workload.kind"),
    ({"workload": {"kind": "sleep", "duration": -1}}, "spec.workload.duration"),
    ({"bogus": 1}, "spec.bogus"),
])
def test_every_refused_submit_field_is_named_with_its_fix(stubs, spec, want):
    """Regression: a job name with a space was refused without BadRequest; every field's refusal carries it."""
    jobs, _, _ = stubs
    code, paths, described = violations(lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=text(**spec)), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == [want], described
    assert any(word in described for word in ("give", "use", "write", "add", "remove", "check", "list", "largest"))
    assert "--" not in described  # the API's field names, not the CLI's flags (the CLI adds those)


@pytest.mark.parametrize("spec, said", [
    (b"ipus: 4\ntime_limit: 10m\n  name: x\n", "line 3, column"),  # not YAML: where it stops being YAML
    (b"ipus: 4\x00", "NUL"),
    (b"", "empty"),
    (b"- 1\n- 2\n", "mapping"),
])
def test_a_spec_refused_as_a_whole_names_the_spec_field(stubs, spec, said):
    """Regression: malformed YAML had ErrorInfo and its line and column, but no BadRequest naming a field."""
    jobs, _, _ = stubs
    code, paths, described = violations(lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=spec), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["spec"] and said in described, described
    many = j.SubmitJobsRequest(jobs=[j.SubmitJobRequest(spec=text()), j.SubmitJobRequest(spec=spec)])
    code, paths, described = violations(lambda: jobs.SubmitJobs(many, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["jobs[1].spec"] and said in described


def test_update_names_a_refused_name(stubs):
    jobs, _, _ = stubs
    [job] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=OK), timeout=10).job_ids
    code, paths, _ = violations(lambda: jobs.UpdateJob(j.UpdateJobRequest(id=job, name="a\nb"), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["name"]


# -- times out of their range -------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_of, want", [
    (lambda: j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, time_limit=Duration(seconds=60, nanos=1_000_000_000))),
     "job_spec.time_limit"),
    (lambda: j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, time_limit=Duration(seconds=60, nanos=-5))),
     "job_spec.time_limit"),
    (lambda: j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, begin_after=Duration(seconds=-60, nanos=5))),
     "job_spec.begin_after"),
    (lambda: j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, workload=s.Workload(
        sleep=s.SleepWorkload(duration=Duration(seconds=400_000_000_000))))), "job_spec.workload.sleep.duration"),
    (lambda: j.SubmitJobRequest(spec=text(), overrides=s.JobSpec(begin_time=Timestamp(seconds=1, nanos=-1))),
     "overrides.begin_time"),
    (lambda: j.SubmitJobRequest(job_spec=s.JobSpec(ipus=4, begin_time=Timestamp(seconds=253_402_300_800))),
     "job_spec.begin_time"),
])
def test_a_time_out_of_its_types_range_is_refused_naming_the_field(stubs, request_of, want):
    """Regression: Duration(seconds=60, nanos=2e9) was taken as 62 s, nanos -5 with 60 seconds as 60 s."""
    jobs, _, _ = stubs
    code, paths, described = violations(lambda: jobs.SubmitJob(request_of(), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == [want] and described.startswith(want)
    assert "nanos" in described or "seconds" in described


def test_update_and_history_times_are_checked_too(stubs):
    jobs, _, _ = stubs
    bad = Duration(seconds=1, nanos=2_000_000_000)
    code, paths, _ = violations(lambda: jobs.UpdateJob(j.UpdateJobRequest(id=1, time_limit=bad), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["time_limit"]
    since = j.HistoryRequest(ended_since=Timestamp(seconds=0, nanos=-1))
    code, paths, _ = violations(lambda: jobs.History(since, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["ended_since"]


# -- UpdateJob: UNLIMITED and a typed begin -----------------------------------------------------------------------


def test_update_takes_unlimited_as_the_qos_allows(stubs):
    """Regression: UpdateJob had no UNLIMITED, which submit takes."""
    jobs, _, _ = stubs
    [normal] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=OK), timeout=10).job_ids
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=normal, time_limit_unlimited=True), timeout=10).jobs
    assert seconds(x.time_limit) == 7200  # normal's max_time_limit, as a submit's UNLIMITED
    high = s.JobSpec(ipus=4, hold=True, qos="high", workload=SLEEP)
    [other] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=high), timeout=10).job_ids
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=other, time_limit_unlimited=True), timeout=10).jobs
    assert seconds(x.time_limit) == 366 * 86400
    both = j.UpdateJobRequest(id=other, time_limit_unlimited=True, time_limit=duration(60))
    code, paths, _ = violations(lambda: jobs.UpdateJob(both, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["time_limit_unlimited"]


def test_update_takes_a_begin_as_text_or_typed(stubs):
    jobs, _, _ = stubs
    [job] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=OK), timeout=10).job_ids
    at = time.time() + 3600
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=job, begin_time=timestamp(at)), timeout=10).jobs
    assert seconds(x.begin) == pytest.approx(at, abs=1e-3)
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=job, begin="now+1hour"), timeout=10).jobs
    assert seconds(x.begin) == pytest.approx(time.time() + 3600, abs=30)
    for text_begin in ("16:00", "tomorrow"):
        [x] = jobs.UpdateJob(j.UpdateJobRequest(id=job, begin=text_begin), timeout=10).jobs
        assert seconds(x.begin) > time.time()
    both = j.UpdateJobRequest(id=job, begin="now", begin_time=timestamp(at))
    code, paths, _ = violations(lambda: jobs.UpdateJob(both, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and paths == ["begin_time"]


# -- smaller ones ------------------------------------------------------------------------------------------------


def test_typed_spec_messages_say_what_to_fix(stubs):
    """Regression: an empty Model() gave "Unable to extract tag", learning_rate nan "too large", a Duration bare
    seconds ("-90.0")."""
    jobs, _, _ = stubs
    empty = s.JobSpec(ipus=4, workload=s.Workload(train=s.TrainWorkload(model=s.Model())))
    code, paths, described = violations(lambda: jobs.SubmitJob(j.SubmitJobRequest(job_spec=empty), timeout=10))
    assert paths == ["spec.workload.model.kind"] and "extract tag" not in described
    nan = s.JobSpec(ipus=4, workload=s.Workload(train=s.TrainWorkload(
        model=s.Model(mlp=s.MlpModel(layers=2, hidden=8, inputs=4, outputs=2)), learning_rate=float("nan"))))
    code, paths, described = violations(lambda: jobs.SubmitJob(j.SubmitJobRequest(job_spec=nan), timeout=10))
    assert paths == ["spec.workload.learning_rate"] and "not a number" in described and "too large" not in described
    negative = s.JobSpec(ipus=4, workload=s.Workload(sleep=s.SleepWorkload(duration=duration(-90))))
    code, paths, described = violations(lambda: jobs.SubmitJob(j.SubmitJobRequest(job_spec=negative), timeout=10))
    assert paths == ["spec.workload.duration"] and described.startswith("-90s is negative")


def test_a_negative_begin_after_is_now_minus(stubs):
    jobs, _, _ = stubs
    past = s.JobSpec(ipus=4, hold=True, begin_after=duration(-10), workload=SLEEP)
    [job] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=past), timeout=10).job_ids
    x = jobs.GetJob(j.GetJobRequest(id=job), timeout=10)
    assert seconds(x.begin) <= time.time()  # eligible at once, as now-10 is


def test_the_default_allocation_has_a_create_time(stubs):
    _, partitions, _ = stubs
    [default] = [a for a in partitions.ListAllocations(p.ListAllocationsRequest(), timeout=10).allocations
                 if a.name == "default"]
    assert default.HasField("create_time") and time.time() - 3600 < seconds(default.create_time) <= time.time()
    assert seconds(default.create_time) == default.created_at


def test_the_python_client_updates_as_scontrol_does(stubs):
    jobs, _, port = stubs
    [job] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=OK), timeout=10).job_ids
    with Client.connect("127.0.0.1", port, timeout=10) as client:
        [x] = client.update(job, time_limit="UNLIMITED", begin="now+1hour", name="renamed")
        assert (seconds(x.time_limit), x.name) == (7200, "renamed")
        assert seconds(x.begin) == pytest.approx(time.time() + 3600, abs=30)
        [x] = client.update(job, time_limit=600, begin=time.time() + 60)
        assert seconds(x.time_limit) == 600 and seconds(x.begin) == pytest.approx(time.time() + 60, abs=30)
        with pytest.raises(ApiError) as refused:
            client.update(job, name="a\nb")
        assert refused.value.field_violations[0][0] == "name" and "--" not in refused.value.message
