"""A queue row's figures from a job message alone (vipu/cli/queue_rows.py)."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from vipu.cli.queue_rows import JobRow
from vipu.v1 import job_pb2 as j


def test_a_completing_jobs_time_stops_at_its_end_and_a_running_jobs_goes_on():
    """walk32: squeue's TIME of a CG job went on counting through KillWait; Slurm's job_time_used reads its end."""
    started, ended = Timestamp(seconds=1000), Timestamp(seconds=1018)
    completing = j.Job(id=1, state_code="CG", started=started, ended=ended)
    running = j.Job(id=2, state_code="R", started=started)
    assert JobRow(completing, now=1030.0).used == 18.0
    assert JobRow(running, now=1030.0).used == 30.0
