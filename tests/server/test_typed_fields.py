"""The typed API beside the deprecated fields: the typed job spec covers the spec models' fields and round-trips to
the same job; a typed submit is checked and refused as a spec's text is; every Timestamp and Duration is the double
it stands beside; the detail and a run's summary typed are their JSON texts."""

from __future__ import annotations

import json
import math

import grpc
import pytest
from google.protobuf.message import Message

from tests.server.test_refusals import fields, refusal
from tests.server.test_training_logs import LocalCall, ended, rt, step_until, submit  # noqa: F401 - rt: the fixture
from vipu.client.messages import duration, seconds, to_data, to_message
from vipu.hardware.pod_files import load_pod
from vipu.jobs.train_spec import TrainWorkload
from vipu.jobs.programs.command_spec import CommandWorkload
from vipu.jobs.convnet import ConvNetModel
from vipu.jobs.layout import Layout
from vipu.jobs.models import MlpModel, TransformerModel
from vipu.jobs.programs.program_record import ProgramRecord
from vipu.jobs.train.results import InstanceRun, IpuUsage, ModelledSteps, TrainingResult
from vipu.jobs.train.runs import JobResult
from vipu.scheduler.job_record import PriorityBreakdown
from vipu.scheduler.job_spec import JobSpec, parse_spec
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.workload import HoldWorkload, SleepWorkload
from vipu.server import job_convert
from vipu.server.job_service import JobService
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc, job_pb2 as j, job_pb2_grpc, job_run_pb2 as r, job_spec_pb2 as s
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc
from vipu.validation import MAX_SPEC_BYTES

SCRIPT = "#!/bin/sh\necho hi\n"
SPECS = {  # a spec of every workload kind and model, and every form of time_limit and begin
    "sleep": {"name": "s", "ipus": 4, "time_limit": "10m", "nice": 5, "qos": "normal", "account": "physics",
              "dependency": "singleton", "array": "0-3%2", "hold": True, "requeue": False, "output": "/tmp/%j.out",
              "submit_dir": "/tmp",
              "allocation": "default", "begin": "now+90", "workload": {"kind": "sleep", "duration": 0.25,
                                                                        "exit_code": 3}},
    "hold": {"ipus": 2, "time_limit": "UNLIMITED", "begin": "tomorrow", "workload": {"kind": "hold"}},
    "default workload": {"ipus": 1, "begin": 1795620000.125},
    "command": {"ipus": 4, "error": "/tmp/err", "workload": {
        "kind": "command", "script": SCRIPT, "args": ["-x", "y"], "submit_dir": "/tmp", "chdir": "/var",
        "environment": {"A": "1", "B": ""}}},
    "mlp": {"ipus": 4, "workload": {"kind": "train", "model": {"kind": "mlp", "layers": 3, "hidden": 16,
                                                                 "inputs": 12, "outputs": 5, "dtype": "fp32"},
                                    "layout": {"r": 4, "micro_batch": 2}, "steps": 3, "learning_rate": 0.5,
                                    "seed": 2**63 - 1, "optimizer": "sgd", "master_weights": False}},
    "transformer": {"ipus": 8, "workload": {
        "kind": "train", "model": {"kind": "transformer", "layers": 4, "hidden": 64, "heads": 4, "seq_len": 8,
                                   "vocab": 100, "ffn_multiplier": 2},
        "layout": {"t": 2, "p": 2, "r": 2, "micro_batches": 4, "schedule": "gpipe", "recompute": True, "rts": True,
                   "offload_optimizer": True, "device_iterations": 2}, "execute": False}},
    "resnet50": {"ipus": 8, "workload": {"kind": "train", "model": {"kind": "resnet50", "batch_norm_replicas": 2},
                                         "layout": {"r": 8, "phased": True}}},
}
SPECIAL = {"begin": ("begin_time", "begin_after", "begin_text"), "time_limit": ("time_limit", "time_limit_unlimited"),
           "kind": ()}  # spec fields whose proto fields are named otherwise (`kind`: the oneof member)


def proto_fields(message: type[Message]) -> set[str]:
    return {f.name for f in message.DESCRIPTOR.fields}


@pytest.mark.parametrize("model, message", [
    (JobSpec, s.JobSpec), (SleepWorkload, s.SleepWorkload), (HoldWorkload, s.HoldWorkload),
    (TrainWorkload, s.TrainWorkload), (CommandWorkload, s.CommandWorkload), (MlpModel, s.MlpModel),
    (TransformerModel, s.TransformerModel), (ConvNetModel, s.ConvNetModel), (Layout, s.Layout),
    (JobResult, r.RunSummary), (ProgramRecord, r.RunSummary), (TrainingResult, r.TrainingResult),
    (ModelledSteps, r.ModelledSteps), (IpuUsage, r.IpuUsage), (InstanceRun, r.InstanceRun),
    (PriorityBreakdown, r.JobPriority),
])
def test_each_typed_message_covers_its_models_fields(model, message):
    """A field added to a spec model or a record without its proto field fails here, before a client misses it.
    Left out on purpose: what the summaries leave out (a run's steps and reports, `vipu logs` has them; a program
    run's node address and spool, which only a restart reads)."""
    left_out = {"steps", "reports", "step", "node_address", "spool"}
    missing = [name for name in model.model_fields if name not in left_out
               and not (set(SPECIAL.get(name, (name,))) <= proto_fields(message))]
    assert missing == []
    assert set(s.Workload.DESCRIPTOR.fields_by_name) - {"other"} >= {"sleep", "hold", "train", "command"}


@pytest.mark.parametrize("name", SPECS)
def test_a_spec_typed_is_the_same_spec(name):
    """The controller's spec as a message, read back as a spec file's mapping, validates to the equal spec; and a
    spec's text sent typed (by a client that builds the message) does too."""
    spec = parse_spec(SPECS[name])
    typed = to_message(spec.model_dump(), s.JobSpec())
    assert parse_spec(to_data(typed)) == spec
    assert s.JobSpec.FromString(typed.SerializeToString()) == typed


def test_unlimited_and_each_form_of_begin_have_their_field():
    specs = {name: to_message(parse_spec(spec).model_dump(), s.JobSpec()) for name, spec in SPECS.items()}
    assert specs["sleep"].WhichOneof("begin") == "begin_after" and seconds(specs["sleep"].begin_after) == 90
    assert specs["hold"].time_limit_unlimited and not specs["hold"].HasField("time_limit")
    assert specs["hold"].WhichOneof("begin") == "begin_text"
    assert specs["default workload"].WhichOneof("begin") == "begin_time"
    assert seconds(specs["default workload"].begin_time) == 1795620000.125
    assert specs["default workload"].workload.WhichOneof("kind") == "hold"
    assert specs["resnet50"].workload.train.model.WhichOneof("kind") == "resnet50"


def test_a_job_typed_carries_what_its_json_does():
    sched = Scheduler(load_pod("bow-pod16"))
    sched.submit({"name": "a", "ipus": 4, "time_limit": "10m", "begin": "now+5m"}, 1795620000.5)
    sched.cycle(1795620000.5)
    job = list(sched.view().queue())[0]
    message = job_convert.job(job)
    assert to_data(message.detail, nulls=True) == json.loads(message.detail_json)
    spec = to_data(message.spec, nulls=True)
    assert parse_spec(spec) == parse_spec(json.loads(message.spec_json)) == job.spec
    brief = job_convert.job(job, brief=True)
    assert not brief.HasField("spec") and not brief.HasField("detail") and brief.spec_json == ""
    for name in ("spec", "detail", "spec_json", "detail_json"):
        message.ClearField(name)
    assert brief == message  # a brief listing leaves out those and nothing else
    assert_times_match(message)


# -- every Timestamp and Duration is the double beside it ----------------------------------------------------------

TIMES = {  # message -> (typed field, deprecated double)
    "vipu.v1.Job": [("time_limit", "time_limit_s"), ("submitted", "submit_time"), ("started", "start_time"),
                    ("ended", "end_time"), ("expected_start", "estimated_start"), ("begin", "begin_time")],
    "vipu.v1.ExpectedStart": [("start_time", "start")],
    "vipu.v1.Partition": [("create_time", "created_at")],
    "vipu.v1.StateChange": [("time", "at")],
    "vipu.v1.Allocation": [("create_time", "created_at")],
    "vipu.v1.Agent": [("create_time", "created_at")],
    "vipu.v1.Cluster": [("create_time", "created_at")],
    "vipu.v1.User": [("create_time", "created_at")],
}


def assert_times_match(message: Message) -> int:
    """Each typed time of `message` and the messages in it equals its deprecated double exactly (both unset
    together); returns how many pairs were set."""
    checked = 0
    for typed, old in TIMES.get(message.DESCRIPTOR.full_name, []):
        has_old = message.HasField(old) if message.DESCRIPTOR.fields_by_name[old].has_presence else True
        assert message.HasField(typed) == has_old, (message.DESCRIPTOR.name, typed)
        if has_old:
            assert seconds(getattr(message, typed)) == getattr(message, old), (message.DESCRIPTOR.name, typed)
            checked += 1
    for field, value in message.ListFields():
        if field.message_type is not None and not field.message_type.GetOptions().map_entry:
            for item in value if field.is_repeated else [value]:
                checked += assert_times_match(item)
    return checked


@pytest.fixture
def stubs(server):
    with grpc.insecure_channel(server.address) as channel:
        yield (job_pb2_grpc.JobServiceStub(channel), partition_pb2_grpc.PartitionServiceStub(channel),
               admin_pb2_grpc.AdminServiceStub(channel))


@pytest.fixture
def refusing_jobs(unchanged_server):
    """The JobService of the module's one controller, for the tests that are refused."""
    with grpc.insecure_channel(unchanged_server.address) as channel:
        yield job_pb2_grpc.JobServiceStub(channel)


def wait_for(predicate, timeout: float = 30.0):
    import time

    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def test_every_timestamp_equals_the_double_beside_it(stubs):
    jobs, partitions, admin = stubs
    partitions.CreatePartition(p.CreatePartitionRequest(name="t", size=4), timeout=5)  # the big job then waits
    sleep = {"ipus": 4, "time_limit": "10m", "workload": {"kind": "sleep", "duration": 0.3}}
    [done] = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(sleep).encode()), timeout=5).job_ids
    [later] = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps({**sleep, "begin": "now+1hour"}).encode()),
                             timeout=5).job_ids
    [big] = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps({**sleep, "ipus": 64, "workload": {
        "kind": "hold"}}).encode()), timeout=5).job_ids
    wait_for(lambda: jobs.GetJob(j.GetJobRequest(id=done), timeout=5).state == "COMPLETED")
    admin.CreateUser(a.CreateUserRequest(name="bob"), timeout=5)
    test_only = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(sleep).encode(), validate_only=True), timeout=5)
    replies = [jobs.GetJob(j.GetJobRequest(id=x), timeout=5) for x in (done, later, big)]
    replies += [jobs.ListJobs(j.ListJobsRequest(), timeout=5), jobs.History(j.HistoryRequest(), timeout=5),
                test_only, partitions.ListPartitions(p.ListPartitionsRequest(), timeout=5),
                partitions.ListAllocations(p.ListAllocationsRequest(), timeout=5),
                admin.ListAgents(a.ListRequest(), timeout=5), admin.ListClusters(a.ListRequest(), timeout=5),
                admin.ListUsers(a.ListRequest(), timeout=5)]
    checked = sum(assert_times_match(reply) for reply in replies)
    ended_job = replies[0]
    assert ended_job.HasField("started") and ended_job.HasField("ended") and replies[1].HasField("begin")
    assert test_only.expected.HasField("start_time") and test_only.expected.HasField("first_ipu")  # its block too
    assert checked > 40


# -- submitting typed -------------------------------------------------------------------------------------------


def test_a_typed_submit_makes_the_job_its_text_makes(stubs):
    jobs, _, _ = stubs
    for name, data in SPECS.items():
        if name in ("mlp", "transformer", "resnet50"):
            continue  # training jobs run; their specs round-trip above
        text = {**data, "hold": True, "dependency": None, "array": None}
        typed = to_message(parse_spec(text).model_dump(exclude_unset=True), s.JobSpec())
        [by_text] = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(text).encode()), timeout=5).job_ids
        [by_type] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=typed), timeout=5).job_ids
        x, y = (jobs.GetJob(j.GetJobRequest(id=i), timeout=5) for i in (by_text, by_type))
        assert x.spec == y.spec and json.loads(x.spec_json) == json.loads(y.spec_json), name
        assert (x.name, x.ipus, x.time_limit, x.held, x.qos) == (y.name, y.ipus, y.time_limit, y.held, y.qos)
    overrides = s.JobSpec(hold=True, name="over", nice=7)
    [job] = jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(SPECS["hold"]).encode(), overrides=overrides),
                           timeout=5).job_ids
    x = jobs.GetJob(j.GetJobRequest(id=job), timeout=5)
    assert (x.name, x.held, x.spec.nice, x.reason) == ("over", True, 7, "JobHeldUser")


@pytest.mark.parametrize("bad, want", [
    ({"ipus": 3}, ["spec.ipus"]),
    ({"ipus": 4, "nice": 20_000}, ["spec.nice"]),
    ({"ipus": 4, "workload": {"kind": "train", "model": {"kind": "mlp", "layers": 2, "hidden": 16, "inputs": 4,
                                                          "outputs": 2}, "layout": {"t": 3}}},
     ["spec.workload.layout"]),
    ({"ipus": 4, "workload": {"kind": "command", "script": "echo no shebang", "submit_dir": "/tmp"}},
     ["spec.workload.script"]),
])
def test_a_typed_spec_with_a_bad_field_is_refused_naming_it_as_its_text_is(refusing_jobs, bad, want):
    jobs = refusing_jobs
    typed = to_message(bad, s.JobSpec())
    code, found = refusal(lambda: jobs.SubmitJob(j.SubmitJobRequest(job_spec=typed), timeout=5))
    text_code, text_found = refusal(lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(bad).encode()),
                                                           timeout=5))
    assert code == text_code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields(found) == fields(text_found) == want
    assert found["BadRequest"] == text_found["BadRequest"]


def test_a_typed_spec_is_held_to_the_size_limit_of_a_specs_text(refusing_jobs):
    """A typed spec is no way round the 1 MB of a spec's text: an 8 MB script typed was queued (walk45), and each
    such job kept its script in the database and in memory."""
    jobs = refusing_jobs
    big = {"ipus": 1, "hold": True, "workload": {"kind": "command", "script": "#!/bin/sh\n#" + "x" * MAX_SPEC_BYTES,
                                                 "submit_dir": "/tmp"}}
    code, found = refusal(lambda: jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(big).encode()), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["spec"]
    typed = to_message(big, s.JobSpec())
    small = b'{"ipus": 1}'
    for request, want in [(j.SubmitJobRequest(job_spec=typed), ["job_spec"]),
                          (j.SubmitJobRequest(spec=small, overrides=typed), ["overrides"]),
                          (j.SubmitJobRequest(spec=small, overrides_json=json.dumps(big)), ["overrides_json"])]:
        code, found = refusal(lambda: jobs.SubmitJob(request, timeout=10))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == want
        assert "at most 1,048,576 bytes" in found["BadRequest"].field_violations[0].description
    fine = j.SubmitJobRequest(job_spec=s.JobSpec(ipus=1, hold=True))
    code, found = refusal(lambda: jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[fine, j.SubmitJobRequest(job_spec=typed)]),
                                                  timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["jobs[1].job_spec"]


def test_a_spec_given_twice_is_refused_naming_the_typed_field(refusing_jobs):
    jobs = refusing_jobs
    both = j.SubmitJobRequest(spec=b'{"ipus": 4}', job_spec=s.JobSpec(ipus=4))
    code, found = refusal(lambda: jobs.SubmitJob(both, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["job_spec"]
    twice = j.SubmitJobRequest(spec=b'{"ipus": 4}', overrides=s.JobSpec(hold=True), overrides_json='{"hold": true}')
    code, found = refusal(lambda: jobs.SubmitJob(twice, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["overrides"]


def test_update_takes_typed_durations(stubs):
    jobs, _, _ = stubs
    [job] = jobs.SubmitJob(j.SubmitJobRequest(job_spec=to_message(
        {"ipus": 64, "time_limit": 600.0, "hold": True}, s.JobSpec())), timeout=5).job_ids
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=job, time_limit=duration(300)), timeout=5).jobs
    assert seconds(x.time_limit) == x.time_limit_s == 300
    [x] = jobs.UpdateJob(j.UpdateJobRequest(id=job, time_limit_add=duration(-60.5)), timeout=5).jobs
    assert seconds(x.time_limit) == x.time_limit_s == 239.5
    both = j.UpdateJobRequest(id=job, time_limit=duration(60), time_limit_s=60)
    code, found = refusal(lambda: jobs.UpdateJob(both, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["time_limit"]


# -- a run's summary ---------------------------------------------------------------------------------------------


def test_a_training_runs_summary_typed_is_its_json(rt):
    job = submit(rt, 4, 3, r=4)
    step_until(rt, lambda: ended(rt, job))
    reply = JobService(rt).GetJob(j.GetJobRequest(id=job), LocalCall())
    typed, text = to_data(reply.result, nulls=True), json.loads(reply.result_json)
    assert text["result"]["ipu_usage"] and text["environment"]
    assert same({k: typed[k] for k in text}, text)  # the times read from the Durations: to the nanosecond
    result = reply.result.result
    for name in ("emulated_step", "predicted_step", "wall"):  # typed beside the deprecated doubles, both filled
        assert result.HasField(name) and abs(seconds(getattr(result, name)) - getattr(result, name + "_s")) < 1e-9
    assert all(typed[k] in (None, [], {}) for k in typed.keys() - text.keys())
    assert seconds(reply.time_limit) == reply.time_limit_s == 300 and not math.isinf(seconds(reply.submitted))


def same(a, b) -> bool:
    """Equal, numbers to a nanosecond (a Duration's resolution)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) < 1e-9
    return a == b


def test_a_typed_spec_with_both_forms_of_its_time_limit_is_refused_naming_them():
    """Regression: time_limit 5 s and time_limit_unlimited both set gave a 366-day limit without a word."""
    from google.protobuf.duration_pb2 import Duration

    from vipu.errors import InvalidArgument
    from vipu.server.job_service import submit_request
    from vipu.v1 import job_spec_pb2

    spec = job_spec_pb2.JobSpec(ipus=4, time_limit=Duration(seconds=5), time_limit_unlimited=True)
    with pytest.raises(InvalidArgument, match=r"job_spec.time_limit and job_spec.time_limit_unlimited are both set"):
        submit_request(j.SubmitJobRequest(job_spec=spec))


def test_a_kind_sent_as_a_struct_keeps_its_whole_numbers_whole():
    """rev40: a workload kind the proto has no message for travels as a Struct, which keeps every number as a double;
    read back, `n: 4` was 4.0, which an integer field of its model refuses (spec_numbers.Whole is strict)."""
    from pydantic import BaseModel

    from vipu.spec_numbers import Number, Whole

    class Later(BaseModel):  # a kind added later, with the number types every kind uses
        kind: str
        n: Whole
        rate: Number
        sizes: list[Whole]

    sent = {"kind": "later", "n": 4, "rate": 1.0, "sizes": [1, 2], "deep": {"m": 3, "x": 0.5}}
    back = to_data(to_message(sent, s.Workload()))
    assert back == sent and type(back["n"]) is int and [type(v) for v in back["sizes"]] == [int, int]
    assert type(back["deep"]["m"]) is int and back["deep"]["x"] == 0.5
    assert Later.model_validate({k: v for k, v in back.items() if k != "deep"}).n == 4


def test_a_run_summary_has_no_field_a_summary_leaves_out():
    """A RunSummary field named after a program run's record field that its summary() leaves out would never be
    set, while its comment said what it carries. Regression: node_address and spool were such fields."""
    record = ProgramRecord(name="1", run=1, output="out")
    never_set = set(ProgramRecord.model_fields) - set(record.summary()) - {"steps", "name"}  # (name: a training
    # run's summary sets it)
    assert never_set == {"node_address", "spool"}
    assert never_set & proto_fields(r.RunSummary) == set()
