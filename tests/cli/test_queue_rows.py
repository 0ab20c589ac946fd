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


def test_nodelist_reason_brackets_the_reason_of_a_pending_failed_or_timed_out_job_as_squeues_print_c():
    """walk40: squeue's %R shows (NonZeroExitCode) and (TimeLimit) for F and TO jobs that are not completing, where
    vipu showed their nodes; a completed, cancelled or completing one shows its nodes."""
    def shown(code: str, state: str, **fields) -> str:
        return JobRow(j.Job(id=1, state_code=code, state=state, **fields), now=0.0).reason_list()

    assert shown("F", "FAILED") == "(NonZeroExitCode)"
    assert shown("F", "FAILED", signal=9) == "(RaisedSignal:9(Killed))"
    assert shown("TO", "TIMEOUT") == "(TimeLimit)"
    assert shown("PD", "PENDING", reason="Resources") == "(Resources)"
    assert shown("PD", "PENDING") == "(None)"
    for code, state in (("CD", "COMPLETED"), ("CA", "CANCELLED"), ("CG", "COMPLETING"), ("NF", "NODE_FAIL")):
        assert shown(code, state) == "", code  # its nodes: none known to this row
