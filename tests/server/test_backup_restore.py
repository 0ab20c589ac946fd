"""README's backup and restore, as an operator runs it: an online copy with SQLite's backup, a clean stop, the copy
put in place, a start with first_job_id above the ids handed out since (`vipu-admin last-job-id` reads it from the
log and the database moved aside, an array's tasks counted); nothing of the copy lost, no id twice."""

from __future__ import annotations

import os
import signal
import sqlite3

import grpc

from tests.cli.test_cli_e2e import run
from vipu.v1 import job_pb2 as j, job_pb2_grpc


def submit_held(address: str, n: int, spec: bytes = b"{ipus: 1, hold: true}") -> list[int]:
    with grpc.insecure_channel(address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        return [jobs.SubmitJob(j.SubmitJobRequest(spec=spec), timeout=30).job_ids[0] for _ in range(n)]


def job_ids(address: str) -> list[int]:
    with grpc.insecure_channel(address) as channel:
        reply = job_pb2_grpc.JobServiceStub(channel).ListJobs(j.ListJobsRequest(), timeout=30)
    return sorted(job.id for job in reply.jobs)


def test_a_restored_backup_serves_its_jobs_and_first_job_id_keeps_ids_unique(server_factory, tmp_path):
    server = server_factory(pod="bow-pod16")
    assert submit_held(server.address, 3) == [1, 2, 3]
    backup = tmp_path / "vipu-backup.sqlite3"
    with sqlite3.connect(server.state_dir / "vipu.sqlite3") as live, sqlite3.connect(backup) as copy:
        live.backup(copy)  # what `sqlite3 vipu.sqlite3 ".backup FILE"` does, while the controller writes
    assert submit_held(server.address, 2) == [4, 5]
    assert submit_held(server.address, 1, b"{ipus: 1, hold: true, array: 0-99}") == [6]  # ids 6 to 105, one line
    server.kill(signal.SIGTERM)
    assert server.proc.returncode == 0
    old = server.state_dir / "old"  # as README moves them: the database, its side files and the marker
    old.mkdir()
    for moved in [*server.state_dir.glob("vipu.sqlite3*"), *server.state_dir.glob("vipu.generation")]:
        moved.rename(old / moved.name)
    (server.state_dir / "vipu.sqlite3").write_bytes(backup.read_bytes())
    given = run(None, "vipu-admin", "last-job-id", str(server.log_path), str(old / "vipu.sqlite3"),
                env=dict(os.environ))
    assert given.returncode == 0, given.stderr
    assert given.stdout == (f"# {server.log_path}: 105\n# {old / 'vipu.sqlite3'}: 105\nfirst_job_id: 106\n")
    config = tmp_path / "scheduler.yaml"
    config.write_text(given.stdout)  # a YAML file: the comments, and the line
    server.extra = ["--scheduler-config", str(config)]
    server.start()
    assert job_ids(server.address) == [1, 2, 3]  # jobs 4 to 105 came after the copy
    assert submit_held(server.address, 1) == [106]
    # walk32: the next start took ids 4-105 for records lost with a damaged page, and quarantined each
    server.kill(signal.SIGTERM)
    server.start()
    assert job_ids(server.address) == [1, 2, 3, 106] and submit_held(server.address, 1) == [107]
    assert "in none of the tables" not in server.stderr_text()
    with sqlite3.connect(server.state_dir / "vipu.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM quarantine").fetchone() == (0,)
