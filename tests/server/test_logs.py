"""The controller's log as a log pipeline reads it (docs/logging.md): with --log-format json one JSON object a line,
one line per job and partition lifecycle event saying who asked and why, the request id of the RPC that made it,
and with --log-level debug a line per RPC."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path

import grpc

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import submit, wait_for
from vipu.control.callers import Call, serving
from vipu.control.lifecycle import LifecycleLog
from vipu.scheduler.job_record import Job, Transition
from vipu.scheduler.job_spec import JobSpec
from vipu.scheduler.job_states import JobState
from vipu.server import log_format
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
BASE_FIELDS = {"time", "level", "logger", "message"}


def lines(server) -> list[dict]:
    out = []
    for line in server.stderr_text().splitlines():
        assert line.startswith("{"), line  # every log line is JSON
        out.append(json.loads(line))
    return out


def events(server, **match) -> list[dict]:
    return [x for x in lines(server) if "event" in x and all(x.get(k) == v for k, v in match.items())]


def one(server, **match) -> dict:
    [found] = wait_for(lambda: events(server, **match))
    return found


def test_every_lifecycle_event_is_one_json_line_with_who_asked_and_why(server_factory):
    server = server_factory(extra=["--log-format", "json"])
    with grpc.insecure_channel(server.address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        as_alice = (("x-vipu-user", "alice"), ("x-request-id", "req-alice-1"))
        reply = stub.SubmitJob(j.SubmitJobRequest(spec=b"{ipus: 4, time_limit: 5m, workload: {kind: sleep, duration:"
                                                        b" 0.2s}}"), metadata=as_alice, timeout=10)
    [done] = reply.job_ids
    submitted = one(server, event="job_submitted", job_id=done)
    assert BASE_FIELDS <= submitted.keys() and submitted["level"] == "INFO" and submitted["logger"] == "vipu.events"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", submitted["time"])
    assert (submitted["user"], submitted["by"], submitted["request_id"], submitted["state"]) == (
        "alice", "alice", "req-alice-1", "PENDING")
    started = one(server, event="job_started", job_id=done)
    assert (started["by"], started["partition"], started["ipus"]) == ("controller", f"slurm_{done}", 4)
    assert "request_id" not in started  # the scheduling loop's, not the submit's
    ended = one(server, event="job_ended", job_id=done)
    assert (ended["state"], ended["exit_code"], ended["by"]) == ("COMPLETED", "0:0", "controller")
    assert one(server, event="partition_created", partition=f"slurm_{done}")["job_id"] == done
    removed = one(server, event="partition_removed", partition=f"slurm_{done}")
    assert (removed["by"], removed["state"]) == ("controller", "REMOVED")

    # a user's commands: hold, release, cancel, requeue; each says who asked
    env = {**server.env(), "VIPU_CLI_API_USER_ID": "bob"}
    [waiting] = submit(server, "--ipus", "64", "--time-limit", "5m", "--hold", "--user", "bob")
    assert run(server, "vipu", "release", str(waiting), env=env).returncode == 0
    released = one(server, event="job_released", job_id=waiting)
    assert (released["user"], released["by"]) == ("bob", "bob")
    one(server, event="job_started", job_id=waiting)
    assert run(server, "vipu", "requeue", str(waiting)).returncode == 0
    requeued = one(server, event="job_requeued", job_id=waiting)
    assert requeued["state"] == "PENDING" and requeued["requeue_count"] == 1 and requeued["reason"]
    assert requeued["run_state"] == "REQUEUED" and not events(server, event="job_ended", job_id=waiting)  # one line
    wait_for(lambda: len(events(server, event="job_started", job_id=waiting)) == 2)
    assert run(server, "vipu", "cancel", str(waiting)).returncode == 0
    cancelled = one(server, event="job_cancelled", job_id=waiting)
    assert cancelled["state"] == "CANCELLED" and cancelled["reason"] == "cancelled while it ran"
    assert len(cancelled["request_id"]) == 32  # the CLI sends one per call

    # a machine failure ends a running job NODE_FAIL and requeues it, saying why
    [hit] = submit(server, "--ipus", "4", "--time-limit", "5m")
    started = one(server, event="job_started", job_id=hit)
    assert run(server, "vipu-admin", "fail", "ipus", str(started["first_ipu"])).returncode == 0
    requeued = one(server, event="job_requeued", job_id=hit)
    assert requeued["message"].startswith(f"job {hit} of ") and "requeued after NODE_FAIL" in requeued["message"]
    assert "failed" in requeued["reason"]
    assert one(server, event="partition_failed", partition=f"slurm_{hit}")["state"] == "FAILED"

    # an array's tasks that do the same in one call share a line
    tasks = submit(server, "--ipus", "1", "--time-limit", "5m", "--hold", "--array", "0-99")
    array = one(server, event="job_submitted", job_id=tasks[0])
    assert (array["array_tasks"], array["tasks"], array["array_job_id"]) == ("0-99", 100, tasks[0])
    assert array["message"].startswith(f"jobs {tasks[0]}_[0-99] of ")
    # every line is JSON, and every line but the lifecycle events' is one of the logger's own
    assert all(BASE_FIELDS <= x.keys() for x in lines(server))


def test_debug_logs_a_line_per_rpc_with_its_request_id(server_factory):
    server = server_factory(extra=["--log-format", "json", "--log-level", "debug"])
    with grpc.insecure_channel(server.address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        stub.ListJobs(j.ListJobsRequest(), metadata=(("x-request-id", "list-1"), ("x-vipu-user", "carol")),
                      timeout=10)
        try:
            stub.GetJob(j.GetJobRequest(id=999), metadata=(("x-request-id", "bad id with spaces"),), timeout=10)
        except grpc.RpcError:
            pass
    listed = one(server, event="rpc", grpc_method="ListJobs")
    assert (listed["request_id"], listed["grpc_service"], listed["grpc_code"], listed["user"]) == (
        "list-1", "vipu.v1.JobService", "OK", "carol")
    assert listed["duration_ms"] >= 0 and listed["level"] == "DEBUG"
    missing = one(server, event="rpc", grpc_method="GetJob")
    assert missing["grpc_code"] == "NOT_FOUND" and re.fullmatch(r"[0-9a-f]{32}", missing["request_id"])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_is_text_on_a_terminal_and_json_elsewhere_and_text_names_the_request():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        screen, pipe = Terminal(), io.StringIO()
        assert log_format.setup("auto", stream=screen) == "text"
        with serving(Call("r-42", "vipu.v1.JobService/SubmitJob", "alice")):
            logging.getLogger("vipu.test").warning("disk %s", "slow")
        log_format.stop()  # a thread writes the lines: stop() returns once it has written every one
        assert re.fullmatch(r"\S+ \S+ WARNING vipu.test: disk slow \[request r-42\]\n", screen.getvalue())
        assert log_format.setup("auto", stream=pipe) == "json"
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("vipu.test").exception("plain")
        log_format.stop()
        line = json.loads(pipe.getvalue())
        assert line["message"] == "plain" and "request_id" not in line
        assert line["exception"].startswith("Traceback") and "ValueError: boom" in line["exception"]
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


class Journal:
    def __init__(self):
        self.committed = []

    def commit(self, puts, deletes):
        self.committed.append((puts, deletes))


def test_a_line_that_cannot_be_written_never_undoes_the_commit(caplog):
    """The records are committed first; a record the log cannot read is logged as an error, and commit returns."""
    journal = Journal()
    log = LifecycleLog(journal)
    with caplog.at_level(logging.ERROR, logger="vipu.events"):
        log.commit([("job", "1", object())], [])  # no job record at all
    assert len(journal.committed) == 1
    assert "could not log the lifecycle events" in caplog.text


def test_the_writer_works_out_the_events_of_a_commit_in_its_place_and_writes_every_one_at_stop():
    """With the log's writer running, a commit only hands its records over; the writer makes its line among the
    lines logged before and after it, as the RPC that committed it (who asked, its request id)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    journal = Journal()
    job = Job.trusted(id=5, name="j", user="alice", spec=JobSpec(name="j", ipus=4, time_limit=60, qos="normal"),
                      state=JobState.PENDING, held=True, submit_time=0.0, history=[Transition(JobState.PENDING, 0.0)])
    try:
        pipe = io.StringIO()
        log_format.setup("json", stream=pipe)
        events_log = LifecycleLog(journal)
        with serving(Call("r-7", "vipu.v1.JobService/SubmitJob", "alice")):
            logging.getLogger("vipu.test").warning("before")
            events_log.commit([("job", "5", job)], [])
            logging.getLogger("vipu.test").warning("after")
        events_log.commit([("job", "5", job.moved(JobState.CANCELLED, 1.0, end_time=1.0))], [])
        log_format.stop()
    finally:
        root.handlers[:], root.level = saved[0], saved[1]
    got = [json.loads(line) for line in pipe.getvalue().splitlines()]
    assert [x["message"] for x in got] == ["before", "job 5 of alice submitted (4 IPUs, held), by alice", "after",
                                           "job 5 of alice cancelled (cancelled while it waited), by controller"]
    assert (got[1]["request_id"], got[1]["by"], got[1]["event"]) == ("r-7", "alice", "job_submitted")
    assert "request_id" not in got[3] and len(journal.committed) == 2


def test_docs_list_every_event_and_field():
    text = (ROOT / "docs/logging.md").read_text()
    source = (ROOT / "vipu/control/lifecycle.py").read_text()
    admin = (ROOT / "vipu/control/admin_events.py").read_text() + (ROOT / "vipu/control/admin_ops.py").read_text()
    made = [f"{kind}_{what}" for kind in ("cluster", "allocation") for what in ("created", "removed")]  # f-strings
    for event in sorted(set(re.findall(r'"((?:job|partition)_[a-z]+)"', source))) + ["rpc"] + made + sorted(
            set(re.findall(r'"((?:agent|ipus|user|machine)_[a-z_]+)"', admin))):
        assert f"`{event}`" in text, event
    for field in ("time", "level", "logger", "message", "request_id", "event", "job_id", "user", "state", "reason",
                  "by", "partition", "exit_code", "array_tasks", "grpc_method", "grpc_code", "duration_ms"):
        assert f"`{field}`" in text, field
