"""vipu.client reads a run's typed Durations (the deprecated doubles may go), writes a negative begin_after as the
spec's now-N, and its own messages name Client.connect's arguments, where the CLI's name its flags."""

from __future__ import annotations

import pytest

from tests.cli.test_connection import Down
from vipu.client import ApiError, Client
from vipu.client.api_error import FLAGS
from vipu.client import settings as client_settings
from vipu.client.messages import duration, to_data, to_message
from vipu.v1 import job_run_pb2 as r
from vipu.v1 import job_spec_pb2 as s


def test_a_runs_times_are_written_typed_and_read_from_the_typed_fields():
    summary = {"emulated_step_s": 0.25, "result": {"wall_s": 3.5, "emulated_step_s": 0.001, "predicted_step_s": 0.002,
                                                   "modelled": {"step_wall_s": 0.1, "steps_run": 2}}}
    message = to_message(summary, r.RunSummary())
    assert message.emulated_step == duration(0.25) and message.result.wall == duration(3.5)
    assert message.result.modelled.step_wall == duration(0.1) and message.result.predicted_step == duration(0.002)
    assert message.emulated_step_s == 0.25  # the deprecated double, filled as well for one release
    data = to_data(message)
    assert data["emulated_step_s"] == 0.25 and data["result"]["wall_s"] == 3.5
    assert data["result"]["modelled"] == {"step_wall_s": 0.1, "steps_run": 2}
    typed_only = r.RunSummary(emulated_step=duration(2.5), result=r.TrainingResult(wall=duration(7)))
    data = to_data(typed_only, nulls=True)  # a controller that no longer sends the doubles
    assert data["emulated_step_s"] == 2.5 and data["result"]["wall_s"] == 7
    assert "emulated_step" not in data and "wall" not in data["result"]  # the mapping keeps its keys


def test_a_negative_begin_after_reads_as_now_minus():
    """Regression: begin_after -10 was written as 'now+-10', which the spec refused."""
    assert to_data(s.JobSpec(begin_after=duration(-10)))["begin"] == "now-10"
    assert to_data(s.JobSpec(begin_after=duration(90)))["begin"] == "now+90"
    assert to_message({"begin": "now-10"}, s.JobSpec()).begin_after == duration(-10)


def test_the_clients_messages_name_its_arguments_and_the_clis_its_flags(monkeypatch):
    """Regression: vipu.client's messages told a script's author to set --api-host."""
    client = ApiError.of_call(Down(), "localhost:1")
    assert "set host/port or VIPU_CLI_API_HOST" in client.message and "--api" not in client.message
    cli = ApiError.of_call(Down(), "localhost:1", FLAGS)
    assert "set --api-host/--api-port or VIPU_CLI_API_HOST" in cli.message
    monkeypatch.delenv("VIPU_CLI_API_PORT", raising=False)
    monkeypatch.setenv("VIPU_CLI_CONFIG", "/dev/null")
    assert Client(client_settings.resolve(port=1)).names["host"] == "host"  # a script's client: its arguments
    with pytest.raises(ApiError, match=r"the API port is 'abc' \(port\), not a number"):
        Client.connect(port="abc")  # regression: it said (--api-port)
    with pytest.raises(ApiError, match=r"the API port is 'abc' \(--api-port\), not a number"):
        client_settings.resolve(port="abc", port_name="--api-port")  # as the CLI resolves its flags


def test_a_user_id_or_key_too_long_for_grpc_metadata_is_refused_before_the_call(monkeypatch):
    """Regression: a 20,000-character key or user id gave gRPC's "metadata size exceeds hard limit" and exit 7."""
    monkeypatch.setenv("VIPU_CLI_CONFIG", "/dev/null")
    with pytest.raises(ApiError, match="the user id is 20,000 characters long; a user name has at most 64"):
        client_settings.resolve(user="u" * 20_000)
    monkeypatch.setenv("VIPU_CLI_API_ACCESS_KEY", "k" * 20_000)
    with pytest.raises(ApiError, match="the access key is 20,000 characters long"):
        client_settings.resolve(user="alice")
